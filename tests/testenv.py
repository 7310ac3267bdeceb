"""A pytest plugin loaded with `-p tests.testenv` (see pyproject.toml), before pytest-django
imports the settings: it points Jezero at a throw-away data folder and an empty config, so
the suite never touches a real library, and runs Huey tasks in immediate mode."""

import atexit
import os
import shutil
import tempfile

_data = tempfile.mkdtemp(prefix="jezero-test-")
os.mkdir(os.path.join(_data, "static"))
atexit.register(shutil.rmtree, _data, ignore_errors=True)

os.environ["JEZERO_DATA_DIR"] = _data
os.environ["JEZERO_CONFIG"] = os.path.join(_data, "jezero.toml")
os.environ["JEZERO_SECRET_KEY"] = "test-secret-key-not-for-production"
os.environ["JEZERO_HUEY_IMMEDIATE"] = "true"
os.environ.pop("JEZERO_DEBUG", None)
