// Package supervision runs child processes and decides when to restart
// them. It knows nothing of MCP or actors: it offers a restart policy as
// data (RestartPolicy, Restarter), one owned child process with its process
// group, pipes, stderr pump and stop ladder (Process), what holds a child
// and everything it starts together (Containment, Cell: a cgroup v2 of its
// own, or its process group and an environment marker; Limits; Reclaim
// after the host crashed; StartSubreaper), and the child's environment
// (BaseEnv, MergeEnv).
//
//	p, err := supervision.StartProcess(supervision.ProcessSpec{
//		Command: "cat",
//		Env:     supervision.BaseEnv(os.Environ()),
//	})
//	if err != nil {
//		return err
//	}
//	defer p.Stop(context.Background()) // close stdin → SIGTERM → SIGKILL, to the whole group
//	io.WriteString(p.Stdin(), "hello\n")
//	line, _ := bufio.NewReader(p.Stdout()).ReadString('\n') // "hello\n"
//
// A Containment hands out one Cell per process; the Process owns it, and
// Stop kills whatever is left in it, setsid escapees included:
//
//	c := supervision.NewContainment(supervision.ContainmentOptions{}) // cgroup if possible
//	defer c.Close()
//	cell, _ := c.NewCell("fs", supervision.Limits{Memory: 512 << 20})
//	p, err := supervision.StartProcess(supervision.ProcessSpec{Command: "npx", Args: args, Env: env, Cell: cell})
//	// journal cell.Placement(); after a crash, supervision.Reclaim(placement)
//
// A Restarter turns the times a server becomes ready and fails into restart
// delays, and says when to give up:
//
//	r := supervision.NewRestarter(supervision.RestartPolicy{}) // defaults
//	r.Ready(startedAt)
//	delay, giveUp := r.Failed(time.Now())
//
// Restarter never reads the clock or sleeps; Process owns exactly two
// goroutines (the reaper and the stderr pump), and Stop joins both.
package supervision
