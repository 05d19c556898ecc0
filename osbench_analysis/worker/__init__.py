"""One worker process: runs batches of one probe and reports (main.py); started in its own process
group and turned into a WorkerOutcome whatever happens (launch.py)."""
