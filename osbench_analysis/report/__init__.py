"""What a reader sees: the paper's macros, tables and generated sections, the run report, the PDF check."""
