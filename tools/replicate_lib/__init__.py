"""tools/replicate.py's parts: the studies' own figures (studies.py), the runs of each experiment
(experiments.py for the trainers, pooling.py for the max-pooling study), the tables (tables.py), the
charts (charts.py) and docs/replication.md's generated blocks (doc.py)."""
