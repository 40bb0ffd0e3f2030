"""Where the package keeps the files it ships, for the modules that read them as paths.

In a checkout, stacks/, constructs_lib/ and templates/ sit at the top level (the layout
README describes) and are linked into the package; a module there that resolved its own
`__file__` would land outside the package, so every such path starts from here. A wheel
holds them inside the package, as the links make them appear.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

PACKAGE = Path(str(resources.files("gpucluster")))
DATA = PACKAGE / "data"
AGENTS = PACKAGE / "agents"
TEMPLATES = PACKAGE / "templates"
