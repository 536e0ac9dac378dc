// Package output prints what the commands report: -o (table, wide, json,
// yaml, jsonpath=TEMPLATE) parsed and written, and the table cells and notes
// several verbs share.
package output
