/* SPDX-License-Identifier: MIT */
/*
 * zsm-bench --plot: read zsm-bench CSV files (plugin,test,size,gbps,usec
 * and, since --gpu, a mem column) and have gnuplot draw GB/s and usec
 * against size on a log2 axis.  The
 * data go inside the gnuplot script as datablocks and the PNG comes back
 * on gnuplot's stdout, so no file name ever appears in gnuplot's input
 * and nothing passes through a shell.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_plot.h"

#define PLOT_MAX_SERIES 64
#define PLOT_MAX_POINTS 128
#define PLOT_NAME_MAX 64
#define PLOT_PACKAGE "gnuplot-nox"

struct plot_point {
	double size;
	double gbps;
	double usec;
};

struct plot_series {
	int file;
	char plugin[PLOT_NAME_MAX];
	char test[PLOT_NAME_MAX];
	char mem[PLOT_NAME_MAX]; /* "host", "gpu0->gpu1" */
	struct plot_point pt[PLOT_MAX_POINTS];
	int n;
};

struct plot {
	struct plot_series s[PLOT_MAX_SERIES];
	int n;
};

static struct plot_series *plot_series_of(struct plot *p, int file,
					  const char *plugin, const char *test,
					  const char *mem)
{
	struct plot_series *s;

	for (int i = 0; i < p->n; i++) {
		s = &p->s[i];
		if (s->file == file && !strcmp(s->plugin, plugin) &&
		    !strcmp(s->test, test) && !strcmp(s->mem, mem))
			return s;
	}
	if (p->n == PLOT_MAX_SERIES)
		return NULL;
	s = &p->s[p->n++];
	s->file = file;
	snprintf(s->plugin, sizeof(s->plugin), "%s", plugin);
	snprintf(s->test, sizeof(s->test), "%s", test);
	snprintf(s->mem, sizeof(s->mem), "%s", mem);
	return s;
}

/* Split a line in place into exactly n comma-separated fields. */
static int plot_split(char *line, char **f, int n)
{
	int i = 0;

	f[i++] = line;
	for (char *c = line; *c; c++) {
		if (*c != ',')
			continue;
		if (i == n)
			return -1;
		*c = '\0';
		f[i++] = c + 1;
	}
	return i == n ? 0 : -1;
}

/* Fields in a line: 5 before --gpu added the mem column, 6 since. */
static int plot_nfields(const char *line)
{
	int n = 1;

	for (; *line; line++)
		n += *line == ',';
	return n;
}

static int plot_read(struct plot *p, int file, const char *path)
{
	char line[512], *f[6], *end;
	const char *mem;
	int nf;
	struct plot_series *s;
	struct plot_point pt;
	FILE *in = fopen(path, "r");
	int lineno = 0;

	if (!in) {
		fprintf(stderr, "zsm-bench: --plot: cannot read %s: %s\n",
			path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), in)) {
		lineno++;
		line[strcspn(line, "\r\n")] = '\0';
		if (!line[0] || line[0] == '#' ||
		    !strcmp(line, "plugin,test,size,gbps,usec") ||
		    !strcmp(line, "plugin,test,size,gbps,usec,mem"))
			continue;
		nf = plot_nfields(line);
		if ((nf != 5 && nf != 6) || plot_split(line, f, nf))
			goto bad;
		mem = nf == 6 ? f[5] : "host";
		errno = 0;
		pt.size = strtod(f[2], &end);
		if (errno || *end || pt.size < 0)
			goto bad;
		/* 0-byte rows are valid results with no place on a log axis. */
		if (pt.size == 0)
			continue;
		pt.gbps = strtod(f[3], &end);
		if (errno || *end)
			goto bad;
		pt.usec = strtod(f[4], &end);
		if (errno || *end)
			goto bad;
		s = plot_series_of(p, file, f[0], f[1], mem);
		if (!s || s->n == PLOT_MAX_POINTS) {
			fprintf(stderr,
				"zsm-bench: --plot: %s: more than %d series "
				"or %d sizes per series\n",
				path, PLOT_MAX_SERIES, PLOT_MAX_POINTS);
			fclose(in);
			return -1;
		}
		s->pt[s->n++] = pt;
	}
	fclose(in);
	return 0;
bad:
	fprintf(stderr,
		"zsm-bench: --plot: %s:%d: not a zsm-bench CSV row "
		"(plugin,test,size,gbps,usec[,mem])\n",
		path, lineno);
	fclose(in);
	return -1;
}

static int plot_cmp(const void *a, const void *b)
{
	const struct plot_point *x = a, *y = b;

	return x->size < y->size ? -1 : x->size > y->size;
}

/*
 * A title goes inside a single-quoted gnuplot string: anything that could
 * end the string or start a command becomes '_'.
 */
static void plot_clean(char *out, size_t len, const char *in)
{
	size_t i;

	for (i = 0; in[i] && i + 1 < len; i++) {
		unsigned char c = (unsigned char)in[i];

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr(" _.:;+/-()>", c))
			out[i] = (char)c;
		else
			out[i] = '_';
	}
	out[i] = '\0';
}

static void plot_title(const struct plot *p, int i, char **files, char *out,
		       size_t len)
{
	const struct plot_series *s = &p->s[i];
	const char *base = strrchr(files[s->file], '/');
	char raw[4 * PLOT_NAME_MAX + 16], mem[PLOT_NAME_MAX + 1] = "";
	int dup = 0;

	base = base ? base + 1 : files[s->file];
	/* The file name tells apart equal series from different runs. */
	for (int j = 0; j < p->n; j++)
		if (j != i && !strcmp(p->s[j].plugin, s->plugin) &&
		    !strcmp(p->s[j].test, s->test) &&
		    !strcmp(p->s[j].mem, s->mem))
			dup = 1;
	/* Host memory is the default and goes unsaid. */
	if (strcmp(s->mem, "host"))
		snprintf(mem, sizeof(mem), " %s", s->mem);
	if (dup)
		snprintf(raw, sizeof(raw), "%s %s%s (%.*s)", s->plugin,
			 s->test, mem, PLOT_NAME_MAX, base);
	else
		snprintf(raw, sizeof(raw), "%s %s%s", s->plugin, s->test, mem);
	plot_clean(out, len, raw);
}

static void plot_panel(FILE *g, const struct plot *p, char **files,
		       int column, const char *ylabel)
{
	char title[4 * PLOT_NAME_MAX + 16];

	fprintf(g, "set ylabel '%s'\n", ylabel);
	fprintf(g, "plot ");
	for (int i = 0; i < p->n; i++) {
		plot_title(p, i, files, title, sizeof(title));
		fprintf(g,
			"%s$d%d using 1:%d with linespoints lw 2 pt 7 ps 0.6 "
			"title '%s'",
			i ? ", \\\n     " : "", i, column, title);
	}
	fprintf(g, "\n");
}

static int plot_script(FILE *g, struct plot *p, char **files)
{
	for (int i = 0; i < p->n; i++) {
		struct plot_series *s = &p->s[i];

		qsort(s->pt, (size_t)s->n, sizeof(s->pt[0]), plot_cmp);
		fprintf(g, "$d%d << EOD\n", i);
		for (int k = 0; k < s->n; k++)
			fprintf(g, "%.0f %.9g %.9g\n", s->pt[k].size,
				s->pt[k].gbps, s->pt[k].usec);
		fprintf(g, "EOD\n");
	}
	/* No "set output": the PNG goes to stdout, which is OUT.png. */
	fprintf(g, "set terminal pngcairo size 1200,450 font ',10' "
		   "noenhanced\n"
		   "set multiplot layout 1,2 title 'zsm-bench: GB/s = 1e9 "
		   "B/s; ping-pong usec = half a round trip'\n"
		   "set logscale x 2\n"
		   "set format x '%%.0b%%B'\n"
		   "set xtics 8\n"
		   "set xlabel 'message size (bytes, log2)'\n"
		   "set grid\n"
		   "set key top left\n");
	plot_panel(g, p, files, 2, "bandwidth, GB/s");
	fprintf(g, "set logscale y 10\n"
		   "set key top left\n");
	plot_panel(g, p, files, 3, "latency, usec (log)");
	fprintf(g, "unset multiplot\n");
	return ferror(g) ? -1 : 0;
}

/* Full path of gnuplot in $PATH, so that "not installed" is told apart. */
static int plot_find_gnuplot(char *out, size_t len)
{
	const char *path = getenv("PATH");
	const char *p, *colon;

	if (!path || !path[0])
		path = "/usr/bin:/bin";
	for (p = path; *p; p = colon + 1) {
		size_t n;

		colon = strchr(p, ':');
		n = colon ? (size_t)(colon - p) : strlen(p);
		if (n && n + sizeof("/gnuplot") <= len) {
			memcpy(out, p, n);
			strcpy(out + n, "/gnuplot");
			if (access(out, X_OK) == 0)
				return 0;
		}
		if (!colon)
			break;
	}
	return -1;
}

static int plot_run(const char *gnuplot, const char *script, const char *out)
{
	int fd, status;
	pid_t pid;

	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "zsm-bench: --plot: cannot write %s: %s\n", out,
			strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		close(fd);
		return -1;
	}
	if (pid == 0) {
		if (dup2(fd, STDOUT_FILENO) < 0)
			_exit(127);
		execl(gnuplot, "gnuplot", script, (char *)NULL);
		fprintf(stderr, "zsm-bench: --plot: cannot run %s: %s\n",
			gnuplot, strerror(errno));
		_exit(127);
	}
	close(fd);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "zsm-bench: --plot: gnuplot failed (status "
				"%d)\n",
			status);
		return -1;
	}
	return 0;
}

int bench_plot(int argc, char **argv)
{
	static struct plot p;
	char gnuplot[4096], script[] = "/tmp/zsm-bench-plot-XXXXXX";
	struct stat st;
	FILE *g;
	int fd, r;

	if (argc < 2) {
		fprintf(stderr, "usage: zsm-bench --plot OUT.png CSV...\n");
		return 1;
	}
	if (plot_find_gnuplot(gnuplot, sizeof(gnuplot))) {
		fprintf(stderr,
			"zsm-bench: --plot needs gnuplot, which is not in "
			"PATH; install the Debian package %s "
			"(apt-get install %s)\n",
			PLOT_PACKAGE, PLOT_PACKAGE);
		return 1;
	}
	for (int i = 1; i < argc; i++)
		if (plot_read(&p, i, argv[i]))
			return 1;
	if (!p.n) {
		fprintf(stderr, "zsm-bench: --plot: no rows in the CSV "
				"files\n");
		return 1;
	}
	fd = mkstemp(script);
	if (fd < 0) {
		fprintf(stderr, "zsm-bench: --plot: mkstemp: %s\n",
			strerror(errno));
		return 1;
	}
	g = fdopen(fd, "w");
	if (!g) {
		close(fd);
		unlink(script);
		return 1;
	}
	r = plot_script(g, &p, argv);
	if (fclose(g))
		r = -1;
	if (r) {
		fprintf(stderr, "zsm-bench: --plot: cannot write %s\n",
			script);
		unlink(script);
		return 1;
	}
	r = plot_run(gnuplot, script, argv[0]);
	unlink(script);
	if (!r && (stat(argv[0], &st) || st.st_size == 0)) {
		fprintf(stderr, "zsm-bench: --plot: gnuplot wrote nothing\n");
		r = -1;
	}
	if (r) {
		unlink(argv[0]);
		return 1;
	}
	printf("zsm-bench: wrote %s (%d series)\n", argv[0], p.n);
	return 0;
}
