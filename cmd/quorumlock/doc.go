// Command quorumlock is the quorumlock library's gate and operator tool:
// run a command under a lock or as an elected leader, check a deployment,
// inspect and force-unlock locks, serve the console, run the demo. It needs
// the library and the standard library only:
//
//	go install github.com/quorumlock/quorumlock/cmd/quorumlock@latest
//
// (the chaos matrix, the simulation and the mutants are the lab's:
// go run ./jepsen-like/cmd/quorumlock-lab in a clone). Each subcommand
// lives in its own file and registers itself; `quorumlock help` lists them
// and `quorumlock CMD --help` shows a command's flags.
//
// Commands that talk to Redis take --nodes, before or after the command
// name: the nodes as redis:// or rediss:// URLs (user, password, DB, TLS)
// separated by commas, by default $QUORUMLOCK_NODES, the variable
// quorum.FromEnv reads too:
//
//	export QUORUMLOCK_NODES=redis://10.0.0.1:6379,redis://10.0.0.2:6379,redis://10.0.0.3:6379
//
// # Running a command under a lock
//
// quorumlock lock is the flock(1) of distributed systems:
//
//	quorumlock lock [--ttl 10s] [--wait DUR | --try] [--fencing] NAME -- COMMAND [ARGS...]
//
// It waits for the lock, runs COMMAND with stdin, stdout and stderr passed
// through, renews the lease while it runs and unlocks when it exits. If the
// lease is lost, the command's process group gets SIGTERM, then SIGKILL
// after --grace. With --fencing the command sees its fencing token in
// $QUORUMLOCK_TOKEN. While it waits and fewer nodes answer than a lock
// needs, it says so on stderr at once and every few seconds, naming each
// silent node and why. The exit status is the command's; 75 when another
// owner holds the lock (--wait elapsed, --try found it held); 3 when too few
// nodes answered to tell; 70 when the lease was lost and the command
// stopped.
//
//	quorumlock lock --wait 1m nightly-report -- ./report.sh
//
// # Operator tools
//
// inspect shows one lock on every node with a verdict, locks lists them,
// unlock --force removes one whoever holds it (recorded with who and when),
// console serves the same in a browser. demo starts local nodes and runs
// contending workers through the lock. Holders show as labels: host:pid of
// the process, or lock --owner NAME.
//
// # Errors and exit status
//
// Results go to stdout; every error and warning goes to stderr, one line
// each, "quorumlock COMMAND: message" (the library's own "quorumlock: "
// prefix is not repeated), saying what was wrong and what to do. go-redis'
// own log lines (it logs every refused dial) are silenced. quorumlock help
// lists the exit statuses: 0 success; 1 an error, or check found a
// problem; 2 a usage error (every bad flag value or argument); 3 fewer
// nodes answered than a quorum needs, so the answer cannot be trusted; 4
// unlock --force found the lock on no node (unless --missing-ok); 5 check:
// one more node failure would leave no quorum (unless --allow-degraded);
// lock adds 75 (held by another owner), 70 (lease lost) and the command's
// own status.
package main
