"""A subclass of a torch attention module that keeps torch's ``__init__``,
defined in one project file and built in another: the construction is the
torch module's, judged where it stands (MHA001 with the layout its calls
feed it, MHA008, MHA101), over the package, one file at a time and through
``check`` (``fixtures/program_calls/imported_subclasses/``)."""

from __future__ import annotations

from fixture_expect import assert_package_runs, write_package
from flake8_mha.analysis.program.summaries import TORCH_BUILT, TORCH_MODULES, summarise
from flake8_mha.lint.engine import analyze_source

PACKAGE = "fixtures/program_calls/imported_subclasses"


def test_over_the_package_one_file_at_a_time_and_through_check():
    assert_package_runs(
        PACKAGE,
        [
            ("text.py", 12, 22, "MHA001"),
            ("vision.py", 24, 22, "MHA008"),
        ],
        select="MHA0,MHA1",
    )


def test_the_summary_names_the_subclasses_built_with_torchs_arguments():
    table = summarise(
        "import torch.nn as nn\n\n\n"
        "class Bare(nn.MultiheadAttention):\n    pass\n\n\n"
        "class Own(nn.MultiheadAttention):\n"
        "    def __init__(self, d):\n        super().__init__(d, 8, batch_first=True)\n"
    )
    assert table[TORCH_MODULES] == {
        "Bare": "torch.nn.MultiheadAttention",
        "Own": "torch.nn.MultiheadAttention",
    }
    assert table[TORCH_BUILT] == {"Bare": "torch.nn.MultiheadAttention"}


def test_a_subclass_with_its_own_init_is_judged_at_its_super_call(tmp_path):
    # its constructions pass the class's own parameters: not torch's
    pkg = write_package(
        tmp_path / "pkg",
        {
            "layers.py": "import torch.nn as nn\n\n\nclass Own(nn.MultiheadAttention):\n"
            "    def __init__(self, d, h):\n        super().__init__(d, h)\n",
            "model.py": "from .layers import Own\n\nattn = Own(192, 5)\n",
        },
    )
    model = pkg / "model.py"
    assert analyze_source(model.read_text(), str(model), ["MHA008", "MHA101"]) == []
    layers = pkg / "layers.py"
    found = analyze_source(layers.read_text(), str(layers), ["MHA008", "MHA101", "MHA001"])
    # there, with what every construction of the project passes it
    assert sorted((f.code, f.line, f.col) for f in found) == [
        ("MHA001", 6, 9),
        ("MHA008", 6, 9),
        ("MHA101", 6, 9),
    ]
    assert "every construction of Own in the project (1) passes" in found[1].message
