#!/bin/sh
# gen_man.sh DCPI OUTDIR - man pages for dcpi and every command, made from
# the commands' own --help (so a page says what the binary does: one source
# of truth) and the command table's one-line descriptions (`dcpi --help`).
# Each command gets dcpi-NAME.1; one with a DCPI name (dcpicalc ...) gets it
# as NAME.1 too, and dcpi.1 lists them all.  `make install` installs them.
set -eu
DCPI=$1
OUT=$2
mkdir -p "$OUT"
day=$(date -u +%Y-%m-%d)

# roff-escape a text block: backslashes, and lines starting with . or '
esc() {
	sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
}

"$DCPI" --help 2>&1 | sed -n 's/^  \([a-z][a-z-]*\)  *\(dcpi[a-z]*\)\{0,1\}  *\(.*\)$/\1|\2|\3/p' \
	> "$OUT/.commands"

{
	printf '.TH DCPI 1 "%s" "dcpi" "dcpi manual"\n' "$day"
	printf '.SH NAME\ndcpi \\- continuous profiling and profile analysis for Linux/x86-64\n'
	printf '.SH SYNOPSIS\n.B dcpi\n.I command\n.RI [ options ]\n'
	printf '.SH DESCRIPTION\n'
	printf 'dcpi re-creates the DIGITAL Continuous Profiling Infrastructure: a collector\n'
	printf 'of program-counter, path and value samples into a profile database, and the\n'
	printf 'analysis that turns them into executions, CPI, stall culprits and compiler\n'
	printf 'feedback.  Every command is one binary; the DCPI names are links to it.\n'
	printf 'The database is \\fB\\-\\-db\\fR DIR, else \\fB$DCPIDB\\fR, else ./dcpidb.\n'
	printf '.SH COMMANDS\n'
	while IFS='|' read -r name alias help; do
		printf '.TP\n.BR dcpi\\-%s (1)\n' "$name"
		[ -n "$alias" ] && printf '(also \\fB%s\\fR) ' "$alias"
		printf '%s\n' "$help" | esc
	done < "$OUT/.commands"
	printf '.SH SEE ALSO\nThe README of the source tree; docs/ for formats and methods.\n'
} > "$OUT/dcpi.1"

while IFS='|' read -r name alias help; do
	page=$OUT/dcpi-$name.1
	usage=$("$DCPI" "$name" --help 2>&1 | head -1 | sed 's/^usage: //')
	upper=$(echo "dcpi-$name" | tr 'a-z-' 'A-Z-')
	{
		printf '.TH %s 1 "%s" "dcpi" "dcpi manual"\n' "$upper" "$day"
		printf '.SH NAME\n%s \\- ' "${alias:-dcpi-$name}"
		printf '%s\n' "$help" | esc
		printf '.SH SYNOPSIS\n.nf\n'
		printf '%s\n' "$usage" | esc
		[ -n "$alias" ] && printf 'dcpi %s ...\n' "$name"
		printf '.fi\n.SH OPTIONS\n.nf\n'
		"$DCPI" "$name" --help 2>&1 | sed 1d | esc
		printf '.fi\n.SH SEE ALSO\n.BR dcpi (1)\n'
	} > "$page"
	[ -n "$alias" ] && cp "$page" "$OUT/$alias.1"
done < "$OUT/.commands"
rm -f "$OUT/.commands"
