"""What runs a task: one `Run` per way of running, chosen by name from a registry.

- `base`: the port (`Run`: prepare, start, resume, release, settle a lost end, may it be
  running), the ports a run is given (`RunPorts`), the reconciler's `LostEnd`, the sweeper's
  `Liveness`;
- `registry`: the runs by name (`RUNS`), and `Runs`, which finds a record's run or a new
  task's;
- one module per run: `direct` (the first leg in an asynchronous invoke), `legs` (every leg in
  an execution of the task state machine), `workflow` (a declared workflow's execution is the
  task), `durable` (a Lambda durable execution runs the tool in checkpointed steps).

A run uses the domain (the record, the moves of `tasks.transitions`) and the ports of
`tasks.ports`; never an adapter (`aws`), the server or wire models. The use cases
(`tasks.service`), the reconciler (`tasks.reconcile`) and the sweeper (`tasks.sweep`) ask the
run of a record instead of telling the runs apart.
"""
