"""Reports: markdown, mutation report, HTML, heat map, summary."""
