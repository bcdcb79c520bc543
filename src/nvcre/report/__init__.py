"""One report model, projected to text, JSON, JUnit, Markdown and HTML."""
