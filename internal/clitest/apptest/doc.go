// Package apptest runs gpuadmit command lines in tests: a Case is one
// command line (arguments, standard input, the name it runs as) and what it
// must print and exit with; Check runs it on app's command tree. Only the
// verbs' external test packages import it.
package apptest
