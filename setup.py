"""Build hook (metadata stays in pyproject.toml): ship the plug-in's Hydra configs and, when the build
has it at hand, the annotated forget10 file inside the wheel.

The annotated file is not kept in this repository: its home is the Hugging Face dataset
`jaeunglee/uds-annotated-tofu`, which the installed toolkit fetches and caches on first use
(checkpoints/tofu_files.py). A build with `$UDS_TOFU_DIR` naming a folder that holds
`forget10_annotated.json` copies it into the built package as
uds_core/package_data/forget10_annotated.json, where `uds_core.paths.packaged_file` finds it at run
time, so that such a wheel scores real checkpoints offline. Any other build ships no data.
"""

import os
import shutil
import warnings
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

NAME = "forget10_annotated.json"          # uds_core.paths.ANNOTATED_FORGET10
TARGET = Path("uds_core") / "package_data"    # uds_core.paths.PACKAGE_DATA, relative to the build folder


def annotated_source() -> Path | None:
    folder = os.environ.get("UDS_TOFU_DIR")
    candidate = Path(folder).expanduser() / NAME if folder else None
    return candidate if candidate is not None and candidate.is_file() else None


class BuildWithData(build_py):
    def run(self):
        super().run()
        source = annotated_source()
        if source is None:
            warnings.warn(f"{NAME} not in $UDS_TOFU_DIR: the wheel ships no annotated forget10 file; "
                          "`uds score` on real checkpoints fetches it from the Hugging Face dataset "
                          "jaeunglee/uds-annotated-tofu on first use (or takes --data / $UDS_TOFU_DIR)")
            return
        target = Path(self.build_lib) / TARGET
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target / NAME)


setup(cmdclass={"build_py": BuildWithData},
      package_data={"uds.ou": ["configs/**/*.yaml"], "checkpoints": ["gguf_packages/*.txt"],
                    "uds.site": ["assets/*.html", "assets/*.js", "assets/*.css"]})
