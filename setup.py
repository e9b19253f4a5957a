"""Build hook (metadata stays in pyproject.toml): ship the plug-in's Hydra configs and the annotated
forget10 file inside the wheel.

The annotated file is not kept in this repository (it lives in ../shared/data/tofu, or in
`$UDS_TOFU_DIR`); `build_py` copies it into the built package as
uds_core/package_data/forget10_annotated.json, where `uds_core.paths.packaged_file` finds it at run time.
A build where neither place holds it warns and ships no data (a source checkout still falls back
to ../shared/data/tofu at run time).
"""

import os
import shutil
import warnings
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
NAME = "forget10_annotated.json"          # uds_core.paths.ANNOTATED_FORGET10
TARGET = Path("uds_core") / "package_data"    # uds_core.paths.PACKAGE_DATA, relative to the build folder


def annotated_source() -> Path | None:
    folder = os.environ.get("UDS_TOFU_DIR")
    for candidate in ([Path(folder) / NAME] if folder else []) + [HERE.parent / "shared" / "data" / "tofu" / NAME]:
        if candidate.is_file():
            return candidate
    return None


class BuildWithData(build_py):
    def run(self):
        super().run()
        source = annotated_source()
        if source is None:
            warnings.warn(f"{NAME} not found ($UDS_TOFU_DIR or ../shared/data/tofu): the wheel ships no "
                          "annotated forget10 file; `uds score` on real checkpoints will need --data")
            return
        target = Path(self.build_lib) / TARGET
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target / NAME)


setup(cmdclass={"build_py": BuildWithData},
      package_data={"uds.ou": ["configs/**/*.yaml"], "checkpoints": ["gguf_packages/*.txt"], "uds.site": ["assets/*.html", "assets/*.js", "assets/*.css"]})
