# compare.awk - tables of bench/bench_model.sh: measured cycles per iteration beside
# each predictor's.  Input (tab-separated, one loop a line):
#	set name measured mca-znver5 mca-znver4 mca-skylake dcpi
# set is "micro" or "loops"; a predictor is "-" when it has no figure.  Prints the
# micro rows, then per set and predictor the mean, median and 90th percentile of
# |predicted - measured| / measured over the loops that predictor covers, then
# the model against each llvm-mca on the same bytes: |dcpi - mca| / mca.
BEGIN {
	FS = "\t"
	npred = 4
	pname[1] = "mca-znver5"; pname[2] = "mca-znver4"; pname[3] = "mca-skylake"
	pname[4] = "dcpi-model"
	printf "%-20s %9s %11s %11s %11s %11s\n", "microbenchmark", "measured",
		pname[1], pname[2], pname[3], pname[4]
}

function rel(p, m) { d = (p - m) / m; return d < 0 ? -d : d }

function sort_n(a, n,    i, j, t) {	# insertion sort, n is small
	for (i = 2; i <= n; i++) {
		t = a[i]
		for (j = i - 1; j >= 1 && a[j] > t; j--)
			a[j + 1] = a[j]
		a[j + 1] = t
	}
}

$1 == "micro" {
	printf "%-20s %9.2f %11s %11s %11s %11s\n", $2, $3, $4, $5, $6, $7
}

$3 > 0 && $7 != "-" && $7 != "" {
	for (k = 1; k <= 3; k++) {
		v = $(3 + k)
		if (v == "-" || v == "" || v + 0 <= 0)
			continue
		n = ++dcnt[$1, k]
		dif[$1, k, n] = rel($7 + 0, v + 0)
	}
}

$3 > 0 {
	set[$1] = 1
	nset[$1]++
	for (k = 1; k <= npred; k++) {
		v = $(3 + k)
		if (v == "-" || v == "")
			continue
		n = ++cnt[$1, k]
		e = rel(v + 0, $3 + 0)
		err[$1, k, n] = e
		sum[$1, k] += e
		if (e <= 0.10)
			w10[$1, k]++
	}
}

END {
	for (s in set) {
		printf "\n%s (%d loops measured): relative error |pred - measured| / measured\n",
			s, nset[s]
		printf "%-12s %6s %8s %8s %8s %10s\n", "predictor", "loops", "mean", "median",
			"p90", "within10%"
		for (k = 1; k <= npred; k++) {
			n = cnt[s, k]
			if (!n) {
				printf "%-12s %6d %8s %8s %8s %10s\n", pname[k], 0, "-", "-", "-",
					"-"
				continue
			}
			delete a
			for (i = 1; i <= n; i++)
				a[i] = err[s, k, i]
			sort_n(a, n)
			med = a[int((n + 1) / 2)]
			p90 = a[int(n * 0.9 + 0.999)]
			printf "%-12s %6d %7.1f%% %7.1f%% %7.1f%% %9.1f%%\n", pname[k], n,
				100 * sum[s, k] / n, 100 * med, 100 * p90, 100 * w10[s, k] / n
		}
		printf "%s: dcpi-model against llvm-mca on the same bytes, |dcpi - mca| / mca\n", s
		for (k = 1; k <= 3; k++) {
			n = dcnt[s, k]
			if (!n)
				continue
			delete a
			for (i = 1; i <= n; i++)
				a[i] = dif[s, k, i]
			sort_n(a, n)
			printf "  vs %-12s %4d loops: median %5.1f%%  p90 %5.1f%%\n", pname[k], n,
				100 * a[int((n + 1) / 2)], 100 * a[int(n * 0.9 + 0.999)]
		}
	}
}
