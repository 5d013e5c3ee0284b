"""Side-by-side benchmarks of Treadle against its peers; run ``python -m benchmarks``."""
