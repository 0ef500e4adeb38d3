// Package supervision runs child processes and decides when to restart
// them. It knows nothing of MCP or actors: it offers a restart policy as
// data (RestartPolicy, Restarter), one owned child process with its process
// group, pipes, stderr pump and stop ladder (Process), and the child's
// environment (BaseEnv, MergeEnv).
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
