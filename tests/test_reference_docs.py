"""docs/reference_data.md: its generated sections are what the data gives today."""
import pytest
from osbench_analysis.reference import docs as reference_docs


@pytest.mark.slow  # integration: writes every figure / regenerates from all data (> 1 s)
def test_generated_sections_are_up_to_date():
    text = reference_docs.DOC.read_text(encoding="utf-8")
    assert reference_docs.render(text) == text, "run: python -m osbench_analysis.reference.docs"


@pytest.mark.slow  # integration: writes every figure / regenerates from all data (> 1 s)
def test_a_changed_claim_shows_as_out_of_date(tmp_path):
    doc = tmp_path / "doc.md"
    text = reference_docs.DOC.read_text(encoding="utf-8")
    doc.write_text(text.replace("| **total** |", "| **sum** |"), encoding="utf-8")
    assert reference_docs.main(["--check", "--doc", str(doc)]) == 1
    assert reference_docs.main(["--doc", str(doc)]) == 0 and doc.read_text(encoding="utf-8") == text


def test_missing_markers_are_refused():
    import pytest

    from osbench_analysis.reference import studies as reference

    with pytest.raises(reference.ReferenceDataError, match="generated:capture"):
        reference_docs.render("no markers here")
