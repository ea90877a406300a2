package quorum

// WaitCalls returns once no call of c is running, among them the calls a
// fan-out left running after a quorum had answered. A test that changes a
// node (FUNCTION FLUSH) waits first, so that change cannot land between a
// late call's recovery and its retry.
func WaitCalls(c *Client) { c.wg.Wait() }
