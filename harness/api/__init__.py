"""Judge your own session store with the bench's invariants: ``validate(factory) -> Report``.

```python
from arib.api import lane, validate

@lane(has_close=True)
def my_store(root, session_id):
    return MySession(session_id, root / "store.db")

report = validate(my_store)  # every check the store's capabilities call for
assert report.passed, report
```
"""

from arib.api.capability import Capability, Found
from arib.api.lane import SESSION_METHODS, Lane, as_lane, lane
from arib.api.report import Report
from arib.api.run import DEFAULT_CHECKS, avalidate, validate

__all__ = ["DEFAULT_CHECKS", "SESSION_METHODS", "Capability", "Found", "Lane", "Report",
           "as_lane", "avalidate", "lane", "validate"]
