"""ARIB-KEY-001: a session opened with the wrong key never destroys history written with the
right one.

Agent code meets this on a key rotation or a misconfigured deployment: one instance of the
service still writes with key A while another, on the same store and session id, was given
key B. The B instance cannot authenticate A's items, so it must not show them, and nothing it
does (reads, pops) may remove them: once the configuration is fixed, a reader with key A
finds every item A wrote, in order. ``EncryptedSession.pop_item`` documents this for a
wrapped stock ``SQLiteSession`` ("An InvalidToken failure leaves the unauthenticated item's
ciphertext and position unchanged"); its docstring also says that over other stores a
"legacy path" may remove items it cannot authenticate (openai-agents 0.24.0), so there this
check reports that loss as what it is: history destroyed by a wrong key.

A trial, on a fresh store with a seeded plan:

1. an instance with the lane's key A appends seeded batches (``add_items``);
2. an instance on the same store with key B (``encryption_key``, a constructor option; a lane
   without it abstains) reads: it must return nothing (it wrote nothing it can authenticate);
3. the B instance pops a seeded number of times: each pop may return None or raise (it
   cannot authenticate the newest item); returning an item is a violation (an item it could
   not have authenticated);
4. a fresh instance with key A reads everything, then the newest item (``limit=1``), then
   pops once and reads again: every item A wrote is there, in order, and its pop takes the
   newest of them.
"""

from __future__ import annotations

import base64
from typing import Any

from arib.checks.base import CheckSpec, Param, Selector, TrialContext, describe
from arib.checks.common import canonical, label, read_items, tally, trials_param
from arib.checks.openai_agents._problems import Problem, labels, problems_trial
from arib.ground.model import Counts, Trial

CHECK_ID = "ARIB-KEY-001"
# Another fixed, public test key (32 bytes, urlsafe base64, as Fernet keys are): not a secret.
OTHER_KEY = base64.urlsafe_b64encode(b"arib-OTHER-test-key-not-secret!!").decode()


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: key A appends, key B reads and pops; key A must still read every item."""
    writer = await ctx.open()
    intruder = await ctx.open_configured(encryption_key=OTHER_KEY)
    tag = f"{ctx.seed:016x}"
    items = [{"role": "user" if n % 2 == 0 else "assistant", "content": f"{tag} item {n}"}
             for n in range(ctx.rng.randint(2, 2 + ctx.params["items"]))]
    cut = ctx.rng.randint(1, len(items) - 1)
    pops = ctx.rng.randint(1, ctx.params["pops"])
    ctx.log(f"key A: add_items([{cut} items]); add_items([{len(items) - cut} items])")
    try:
        await writer.session.add_items(items[:cut])
        await writer.session.add_items(items[cut:])
    except Exception as exc:  # noqa: BLE001 - a store that cannot be filled is evidence
        return Trial(ctx.index, ctx.seed, True, Counts(lost=len(items), raised=1),
                     mode="setup_failed", sample=f"key A's add_items raised {describe(exc)}",
                     ops=tuple(ctx.ops))
    problems: list[Problem] = []
    foreign = 0
    ctx.log(f"key B, same store and session id: get_items(); pop_item() x{pops}")
    try:
        shown = await read_items(intruder.session)
        if shown:
            foreign += len(shown)
            problems.append(("shown_to_wrong_key", f"key B's get_items() returned "
                                                   f"{labels(shown)}; it wrote nothing"))
    except Exception as exc:  # noqa: BLE001 - a refusal shows nothing: allowed
        ctx.log(f"  key B's get_items() raised {describe(exc)}")
    for n in range(pops):
        try:
            popped = await intruder.session.pop_item()
        except Exception as exc:  # noqa: BLE001 - refusing to pop is allowed
            ctx.log(f"  key B's pop {n + 1} raised {describe(exc)}")
            continue
        if popped is not None:
            foreign += 1
            problems.append(("popped_by_wrong_key", f"key B's pop {n + 1} returned "
                                                    f"{label(popped)}; it wrote nothing"))
    reader = await ctx.reopen(writer)
    ctx.log("key A, a fresh instance: get_items(); get_items(limit=1); pop_item(); get_items()")
    final: list[Any] = []
    raised = 0
    try:
        seen = await read_items(reader.session)
        if [canonical(i) for i in seen] != [canonical(i) for i in items]:
            problems.append(("history_destroyed" if len(seen) < len(items) else "wrong_items",
                             f"after key B's reads and pops, key A's get_items() returned "
                             f"{labels(seen)}; expected {labels(items)}"))
        newest = await read_items(reader.session, 1)
        if [canonical(i) for i in newest] != [canonical(items[-1])]:
            problems.append(("wrong_window", f"key A's get_items(limit=1) returned "
                                             f"{labels(newest)}; expected {labels(items[-1:])}"))
        popped = await reader.session.pop_item()
        if popped is None or canonical(popped) != canonical(items[-1]):
            problems.append(("pop_wrong", f"key A's pop returned "
                                          f"{None if popped is None else label(popped)}; "
                                          f"expected {label(items[-1])}"))
        final = await read_items(reader.session)
    except Exception as exc:  # noqa: BLE001 - a read that raises cannot show the history
        raised += 1
        problems.append(("read_raised", f"key A's read or pop raised {describe(exc)}"))
    counts = tally(items[:-1], final, raised=raised) + Counts(foreign=foreign)
    if not problems and counts.total:
        problems.append(("history_destroyed", f"key A's last get_items() returned "
                                              f"{labels(final)}; expected {labels(items[:-1])}"))
    return problems_trial(ctx, problems, counts, "kept")

CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="a session opened with the wrong key never destroys history written with the "
    "right one: it shows and pops none of it, and afterwards every item written with the "
    "right key is there, in order",
    fault="seeded batches written with key A, then an instance with key B on the same store "
    "and session id reads and pops (1 to pops times); then a fresh key-A instance reads all, "
    "limit=1, pops once and reads again",
    params=(
        Param("items", 4, 0, 50, "items beyond the first two that key A writes"),
        Param("pops", 3, 1, 20, "the most pops the key-B instance tries"),
        trials_param(3),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_pop_drops_unauthenticated_rows",
        "encrypted_pop_deletes_before_it_authenticates",
    ),
    generated=(
        Selector("encrypted-sqlite", "EncryptedSession.pop_item", "flip_comparison"),
    ),
    timeout_s=60.0,
)
