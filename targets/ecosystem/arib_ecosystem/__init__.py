"""Third-party backends as lanes of the integrity bench, one module per family.

Each module's ``LANES`` is a tuple of ``arib.targets.base.TargetSpec``, registered in this
distribution's entry points (``arib.lanes.langgraph``, ``arib.lanes.openai_agents``). Loading a
table imports no backend: a lane imports its package when it is built, so a lane whose package
is not installed is reported as not measured (``TargetSpec.distribution``) and the others go on.
"""
