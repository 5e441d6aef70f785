"""Scaffolds a new check and its first hand-written mutant, ready to be filled in."""

from __future__ import annotations

import re
from pathlib import Path

from arib.checks.registry import ID_RULE, load_checks
from arib.ground.errors import UsageError
from arib.ground.family import active_family
from arib.ground.package import checkout_name
from arib.targets.registry import get_target

CHECK_TEMPLATE = '''"""{check_id}: TODO the invariant in one sentence."""

from __future__ import annotations

from arib.checks.base import CheckSpec, Selector, TrialContext
from arib.checks.common import trials_param
from arib.ground.model import Counts, Trial


async def run_trial(ctx: TrialContext) -> Trial:
    handle = await ctx.open()
    session = handle.session
    ctx.log("TODO: the operations of the fault, in order")
    # Inject the fault (arib.checks.base.race / race_threads release calls together), catch what
    # the backend raises, then judge the invariant into counts and a mode.
    del session
    raise NotImplementedError("{check_id}: write the fault and the judgement")
    return Trial(ctx.index, ctx.seed, False, Counts(), mode="TODO")


CHECK = CheckSpec(
    id="{check_id}",
    invariant="TODO the invariant in one sentence",
    fault="TODO the fault injected",
    params=(trials_param(3),),
    run_trial=run_trial,
    mutants=("{mutant_name}",),
    # Narrow on purpose: one generated mutant (the method the first mutant breaks); widen it
    # once the check kills it (`python -m arib survey --lanes {lane}` lists the rest).
    generated=(Selector("{lane}", "{backend}.add_items", "early_return"),),
)
'''

MUTANT_TEMPLATE = '''"""Hand-written mutants paired with {check_id} (overrides, our own code)."""

from __future__ import annotations

from typing import Any

from arib.mutants.base import handwritten, load_class

MODULE = "{module}"


@handwritten(
    target="{lane}",
    module=MODULE,
    qualname="{backend}.add_items",
    defect="TODO one sentence: the defect this override models",
)
def {mutant_name}() -> None:
    cls = load_class(MODULE, "{backend}")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        raise NotImplementedError("{mutant_name}: write the defect")
        await original(self, items)

    cls.add_items = add_items
'''


def _folder(package: str) -> Path:
    """The checkout folder of a package of the project (``arib.checks.openai_agents`` ->
    checks/openai_agents)."""
    return Path(*checkout_name(package).split("."))


def scaffold(check_id: str, lane: str, root: Path) -> tuple[Path, Path]:
    """Write <area>_<nnn>.py in the active family's checks and mutants folders (for
    openai-agents, checks/openai_agents/ and mutants/openai_agents/); refuse to overwrite."""
    if not ID_RULE.match(check_id):
        raise UsageError(f"check id {check_id!r} does not look like ARIB-AREA-001; pick one "
                         f"that does, e.g. ARIB-POP-001")
    if check_id in {c.id for c in load_checks()}:
        raise UsageError(f"check id {check_id!r} is taken; pick another")
    target = get_target(lane)
    slug = re.sub(r"^ARIB-", "", check_id).lower().replace("-", "_")
    mutant_name = f"{slug}_{target.name.replace('-', '_')}_todo"
    family = active_family()
    check_path = root / _folder(family.checks) / f"{slug}.py"
    mutant_path = root / _folder(family.mutants) / f"{slug}.py"
    for path in (check_path, mutant_path):
        if not path.parent.is_dir():
            raise UsageError(f"no folder {str(path.parent)!r}: the rule: a check and its first "
                             f"mutant go into the {family.name} family's folders of a checkout; "
                             f"fix: run from the project's checkout or pass --root")
        if path.exists():
            raise UsageError(f"{str(path)!r} exists already; remove it or pick another id")
    fields = {"check_id": check_id, "lane": target.name, "backend": target.backend,
              "module": target.module, "mutant_name": mutant_name}
    check_path.write_text(CHECK_TEMPLATE.format(**fields))
    mutant_path.write_text(MUTANT_TEMPLATE.format(**fields))
    return check_path, mutant_path
