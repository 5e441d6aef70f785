"""Generate mutants from the installed backend source with the libcst operators.

The source is read from the installed module at run time (never written). Every operator is
asked about every node inside the backend class's methods (and the module-level helpers the
class calls); each replacement becomes one mutant whose ``source`` is the full mutated module.

Speed: the module is parsed once. A mutant rebuilds only the method it changes (along the
path from the site up to the method), renders that method in a one-line class wrapper that
reproduces its indentation, and splices the text over the method's exact text in the
original source; the rest of the module stays byte-identical. The same wrapper text is what
``compile()`` checks, so a syntax error anywhere in the mutated module is caught (the other
lines are unchanged and compiled before). A method whose rendering cannot be found verbatim
in the source falls back to rendering and compiling the whole module.
"""

from __future__ import annotations
import __future__

import dataclasses
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import libcst as cst

from arib.ground.errors import MutantDefinitionError, UnknownNameError
from arib.ground.model import MutantKind
from arib.ground.sources import installed_source
from arib.mutants.base import MutantSpec, mutant_id
from arib.mutants.operators import OPERATORS, Operator, Replacement
from arib.mutants.report import GenerationReport as GenerationReport  # re-exported
from arib.mutants.report import select as select  # re-exported
from arib.mutants.swap import UnitSwap, import_lines, unit_swap

if TYPE_CHECKING:
    from arib.targets.base import TargetSpec


@dataclass(frozen=True)
class _Site:
    operator: Operator
    qualname: str
    path: tuple[cst.CSTNode, ...]  # from the root of the walk down to the site node
    replacements: tuple[Replacement, ...]


@dataclass(frozen=True)
class _Unit:
    """A method of the backend class, or a module-level helper it uses."""

    node: cst.FunctionDef
    scope: str  # qualname prefix: the class name, or "" for a helper
    text: str  # its text as rendered in context, equal to its text in the source
    offset: int | None  # where ``text`` sits in the source; None -> whole-module fallback


class _SiteCollector(cst.CSTVisitor):
    """Walks one subtree, tracking the qualified name, and asks every operator every node."""

    def __init__(self, operators: Sequence[Operator], scope: str) -> None:
        self.operators = operators
        self.path: list[cst.CSTNode] = []
        self.scopes: list[tuple[str, bool]] = [(scope, False)]  # (qualname, is a function)
        self.sites: list[_Site] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.path.append(node)
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            outer, in_function = self.scopes[-1]
            sep = ".<locals>." if in_function else "."
            name = f"{outer}{sep}{node.name.value}" if outer else node.name.value
            self.scopes.append((name, isinstance(node, cst.FunctionDef)))
        if _not_mutated(node):
            return False
        for op in self.operators:
            replacements = op.mutate(node)
            if replacements:
                self.sites.append(_Site(op, self.scopes[-1][0], tuple(self.path),
                                        tuple(replacements)))
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if isinstance(original_node, (cst.FunctionDef, cst.ClassDef)):
            self.scopes.pop()
        self.path.pop()


def _not_mutated(node: cst.CSTNode) -> bool:
    """Decorators, signatures, annotations and docstring-like lines are left alone."""
    if isinstance(node, (cst.Decorator, cst.Parameters, cst.Annotation)):
        return True
    if isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1:
        small = node.body[0]
        strings = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
        return isinstance(small, cst.Expr) and isinstance(small.value, strings)
    return False


def _replace_child(parent: cst.CSTNode, old: cst.CSTNode, new: Replacement) -> cst.CSTNode:
    """``parent`` with its child ``old`` replaced by ``new`` (a node, a removal, a flatten)."""
    for f in dataclasses.fields(parent):
        value = getattr(parent, f.name)
        if value is old:
            if not isinstance(new, cst.CSTNode):
                raise ValueError(f"cannot remove or flatten the {f.name!r} of a "
                                 f"{type(parent).__name__}")
            return parent.with_changes(**{f.name: new})
        if isinstance(value, (list, tuple)) and any(v is old for v in value):
            items: list[Any] = []
            for v in value:
                if v is not old:
                    items.append(v)
                elif isinstance(new, cst.FlattenSentinel):
                    items.extend(new.nodes)
                elif isinstance(new, cst.CSTNode):
                    items.append(new)
            return parent.with_changes(**{f.name: items})
    raise LookupError(f"{type(old).__name__} is not a child of {type(parent).__name__}")


def _rebuild(path: Sequence[cst.CSTNode], replacement: Replacement) -> cst.CSTNode:
    """The root of ``path`` with the last node of ``path`` replaced."""
    new: Replacement = replacement
    for parent, child in zip(reversed(path[:-1]), reversed(path[1:]), strict=True):
        new = _replace_child(parent, child, new)
    if not isinstance(new, cst.CSTNode):
        raise ValueError("the replacement removes the whole unit")
    return new


def _bare(node: cst.CSTNode) -> cst.CSTNode:
    """The node without the blank lines and comments that precede it."""
    if any(f.name == "leading_lines" for f in dataclasses.fields(node)):
        return node.with_changes(leading_lines=())
    return node


def _snippet(module: cst.Module, node: Replacement) -> str:
    """The code of a site node or of its replacement (empty for a removal)."""
    if isinstance(node, cst.RemovalSentinel):
        return ""
    nodes = list(node.nodes) if isinstance(node, cst.FlattenSentinel) else [node]
    text = "".join(module.code_for_node(_bare(n)) for n in nodes).strip("\n")
    return text + "\n" if text else ""


def _future_flags(module: cst.Module) -> int:
    flags = 0
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if (isinstance(small, cst.ImportFrom) and isinstance(small.module, cst.Name)
                    and small.module.value == "__future__"
                    and not isinstance(small.names, cst.ImportStar)):
                for alias in small.names:
                    feature = getattr(__future__, str(alias.evaluated_name), None)
                    flags |= getattr(feature, "compiler_flag", 0)
    return flags


class _Renderer:
    """Renders a unit exactly as it appears in the module, and splices it into the source."""

    WRAPPER = "class _:"

    def __init__(self, source: str, module: cst.Module, class_def: cst.ClassDef | None) -> None:
        self.source = source
        self.module = module
        self.class_body = class_def.body if class_def is not None else None
        self.flags = _future_flags(module)

    def wrapped(self, unit: cst.CSTNode, in_class: bool) -> str:
        """The module text of ``unit`` alone, inside a one-line class header for a method."""
        bare = _bare(unit)
        if in_class and isinstance(self.class_body, cst.IndentedBlock):
            body = self.class_body.with_changes(body=[bare], footer=())
            bare = cst.ClassDef(name=cst.Name("_"), body=body)
        return self.module.with_changes(body=[bare], header=(), footer=()).code

    def unit_text(self, wrapped: str, in_class: bool) -> str:
        if not in_class:
            return wrapped
        return wrapped.split(self.module.default_newline, 1)[1]

    def locate(self, text: str) -> int | None:
        at = self.source.find(text)
        if at < 0 or (at > 0 and self.source[at - 1] != "\n"):
            return None
        if self.source.find(text, at + 1) >= 0:
            return None
        return at

    def check(self, code: str, filename: str) -> None:
        """Raise SyntaxError (or ValueError) when ``code`` does not compile."""
        compile(code, filename, "exec", flags=self.flags, dont_inherit=True)


# Methods Python calls while a class is being created (also a subclass in another module).
_CLASS_CREATION = frozenset({"__init_subclass__", "__set_name__", "__prepare__", "__new__"})


def _import_time_names(module: cst.Module) -> frozenset[str]:
    """Every name (and attribute name) an import of ``module`` may call: everything outside
    function bodies (decorators and defaults included), then what the bodies of the
    module's functions of those names refer to, and so on. A function called while the
    module is imported cannot be swapped in place: its old code already ran there
    (``arib.mutants.swap``)."""
    names: set[str] = set(_CLASS_CREATION)
    bodies: dict[str, set[str]] = {}

    class _Names(cst.CSTVisitor):
        def __init__(self, into: set[str]) -> None:
            self.into = into

        def visit_Name(self, node: cst.Name) -> None:
            self.into.add(node.value)

        def visit_Attribute(self, node: cst.Attribute) -> None:
            self.into.add(node.attr.value)

    class _Outside(_Names):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            for decorator in node.decorators:
                decorator.visit(self)
            node.params.visit(self)
            if node.returns is not None:
                node.returns.visit(self)
            # The body runs only when the function is called.
            node.body.visit(_Names(bodies.setdefault(node.name.value, set())))
            return False

    module.visit(_Outside(names))
    grown = names & bodies.keys()
    while grown:
        new = set().union(*(bodies[n] for n in grown)) - names
        names |= new
        grown = new & bodies.keys()
    return frozenset(names)


def _units(module: cst.Module, class_def: cst.ClassDef, helpers: bool) -> list[tuple[
        cst.FunctionDef, str]]:
    """The class's methods, then the module-level functions the class refers to by name."""
    out = [(stmt, class_def.name.value) for stmt in _body(class_def)
           if isinstance(stmt, cst.FunctionDef)]
    if helpers:
        class_names = {n.value for n in _names(class_def)}
        out += [(stmt, "") for stmt in module.body
                if isinstance(stmt, cst.FunctionDef) and stmt.name.value in class_names]
    return out


def _body(class_def: cst.ClassDef) -> Sequence[cst.BaseStatement | cst.BaseSmallStatement]:
    return class_def.body.body


def _names(node: cst.CSTNode) -> list[cst.Name]:
    found: list[cst.Name] = []

    class _Names(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.append(name)

    node.visit(_Names())
    return found


def _resolve_operators(names: Iterable[str] | None) -> list[Operator]:
    if names is None:
        return list(OPERATORS.values())
    chosen = []
    for name in names:
        if name not in OPERATORS:
            raise UnknownNameError(
                f"unknown mutation operator {name!r}; known: {', '.join(OPERATORS)}"
            )
        chosen.append(OPERATORS[name])
    return chosen


def generate_from_source(
    source: str,
    module: str,
    target_name: str,
    class_name: str,
    operators: Iterable[str] | None = None,
    *,
    helpers: bool = True,
) -> GenerationReport:
    """Mutants of class ``class_name`` in ``source`` (the text of module ``module``)."""
    ops = _resolve_operators(operators)
    tree = cst.parse_module(source)
    class_def = next((s for s in tree.body
                      if isinstance(s, cst.ClassDef) and s.name.value == class_name), None)
    if class_def is None:
        raise MutantDefinitionError(
            f"class {class_name!r} is not defined at the top level of {module}; "
            f"cannot generate mutants for target {target_name!r}"
        )
    renderer = _Renderer(source, tree, class_def)
    import_time = _import_time_names(tree)
    imports = import_lines(source)
    filename = f"<mutant {module}>"
    mutants: list[MutantSpec] = []
    dropped: list[str] = []
    sites_by_operator = {op.name: 0 for op in ops}
    occurrences: Counter[tuple[str, str, str, str]] = Counter()

    for unit, scope in _units(tree, class_def, helpers):
        in_class = bool(scope)
        text = renderer.unit_text(renderer.wrapped(unit, in_class), in_class)
        offset = renderer.locate(text)
        collector = _SiteCollector(ops, scope)
        unit.visit(collector)
        for site in collector.sites:
            sites_by_operator[site.operator.name] += 1
            original = _snippet(tree, site.path[-1])
            for replacement in site.replacements:
                mutated_text = _snippet(tree, replacement)
                key = (site.qualname, site.operator.name, original, mutated_text)
                occurrence = occurrences[key]
                occurrences[key] += 1
                where = f"{site.qualname} [{site.operator.name}]"
                swap: UnitSwap | None = None
                try:
                    new_unit = _rebuild(site.path, replacement)
                    if offset is None:
                        new_tree = tree.deep_replace(unit, new_unit)
                        assert isinstance(new_tree, cst.Module)
                        new_source = new_tree.code
                        renderer.check(new_source, filename)
                    else:
                        wrapped = renderer.wrapped(new_unit, in_class)
                        renderer.check(wrapped, filename)
                        new_text = renderer.unit_text(wrapped, in_class)
                        new_source = source[:offset] + new_text + source[offset + len(text):]
                        # Only a changed body can be swapped in place (see arib.mutants.swap).
                        if (isinstance(new_unit, cst.FunctionDef)
                                and unit.name.value not in import_time
                                and unit.deep_equals(new_unit.with_changes(body=unit.body))):
                            swap = unit_swap(scope, unit.name.value, new_text,
                                             source.count("\n", 0, offset) + 1,
                                             renderer.flags, imports)
                except (SyntaxError, ValueError, LookupError, cst.CSTValidationError) as exc:
                    dropped.append(f"{where}: {type(exc).__name__}: {exc}")
                    continue
                id_qualname = site.qualname if occurrence == 0 else \
                    f"{site.qualname}#{occurrence}"
                mutants.append(MutantSpec(
                    id=mutant_id(module, id_qualname, site.operator.name, original,
                                 mutated_text),
                    kind=MutantKind.GENERATED,
                    target=target_name,
                    module=module,
                    qualname=site.qualname,
                    operator=site.operator.name,
                    original=original,
                    replacement=mutated_text,
                    description=f"{site.qualname}: {site.operator.defect}",
                    source=new_source,
                    swap=swap,
                ))
    return GenerationReport(
        target=target_name,
        module=module,
        mutants=tuple(mutants),
        dropped_noncompiling=len(dropped),
        dropped_details=tuple(dropped),
        sites_by_operator=sites_by_operator,
    )


def generate(target: TargetSpec, operators: Iterable[str] | None = None) -> GenerationReport:
    """Mutants of ``target.backend`` generated from the installed source of ``target.module``."""
    _, source = installed_source(target.module)
    return generate_from_source(source, target.module, target.name, target.backend, operators)


def apply_operator(source: str, operator: str) -> list[str]:
    """Every mutated version of a whole module ``source`` under one operator (for tests)."""
    (op,) = _resolve_operators([operator])
    tree = cst.parse_module(source)
    collector = _SiteCollector([op], "")
    tree.visit(collector)
    out = []
    for site in collector.sites:
        for replacement in site.replacements:
            new_tree = _rebuild(site.path, replacement)
            assert isinstance(new_tree, cst.Module)
            out.append(new_tree.code)
    return out
