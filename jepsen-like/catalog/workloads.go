package catalog

// Workload is what a cell's workers do with the lock: the lock kind they
// take and the property that kind promises. Workloads are the catalog's
// third dimension, beside modes and scenarios.
type Workload struct {
	// ID names the workload on the command line and in reports.
	ID string
	// Summary says what the workers do, in a sentence.
	Summary string
	// NotOn names the runners that cannot run the workload, with why.
	NotOn map[Runner]string
}

// RunsOn reports whether runner r runs w, and if not, why.
func (w Workload) RunsOn(r Runner) (bool, string) {
	why, no := w.NotOn[r]
	return !no, why
}

// Workloads are the workloads, in report order. Mutex is every runner's
// default.
var Workloads = []Workload{
	{ID: "mutex", Summary: "workers take one Mutex with a fixed lease (or a watchdog-renewed one where the scenario says so), " +
		"read a counter under it, work, write the counter + 1 with their token, unlock"},
}

// DefaultWorkload is the workload of a cell that names none.
const DefaultWorkload = "mutex"

// FindWorkload returns the workload with the given id.
func FindWorkload(id string) (Workload, bool) {
	for _, w := range Workloads {
		if w.ID == id {
			return w, true
		}
	}
	return Workload{}, false
}
