"""docs/config.md is the campaign file's reference, generated from config/schema.yaml: written once, never
behind it."""

from pathlib import Path

from fsbench.campaign import reference

DOC = Path(__file__).parent.parent / "docs" / "config.md"


def test_the_config_reference_is_the_schema():
    assert DOC.read_text() == reference.markdown(), (
        "docs/config.md is not what config/schema.yaml says: regenerate it with "
        "`cd scripts && ../.venv/bin/python -m fsbench.campaign.reference > ../docs/config.md`"
    )


def test_every_key_of_the_schema_is_in_it():
    text = DOC.read_text()
    for key in ("campaign", "io.runtime", "io.steady.window", "arrays.<name>.kind", "metadata.fsync", "baselines"):
        assert f"- `{key}`" in text
