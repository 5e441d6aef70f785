"""The LangGraph family's checks: each module defines CHECK (ids ARIB-<AREA>-NNN)."""
