/* SPDX-License-Identifier: MIT */
/* Builds the recorded PCI trees of data/pci as sysfs trees (pci_tree.h). */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pci_tree.h"
#include "zsm_test.h"

#ifndef ZSM_TEST_PCI_DIR
#error "ZSM_TEST_PCI_DIR names the recorded trees"
#endif


void fmt(char *buf, const char *f, ...)
{
	va_list ap;
	int n;

	va_start(ap, f);
	n = vsnprintf(buf, PATH_MAX, f, ap);
	va_end(ap);
	assert_true(n >= 0 && n < PATH_MAX);
}

void mkdirs(const char *path)
{
	char p[PATH_MAX];

	fmt(p, "%s", path);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
	mkdir(p, 0755);
}

static void put_file(const char *dir, const char *name, const char *text)
{
	char p[PATH_MAX];
	FILE *f;

	fmt(p, "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", text);
	fclose(f);
}

/* A device as sysfs has it: its folder with vendor, class and numa_node,
 * and its bus id's link in /sys/bus/pci/devices. */
static void add_dev(const char *root, const char *path, const char *vendor,
		    const char *class, const char *numa)
{
	char dir[PATH_MAX], link[PATH_MAX], target[PATH_MAX];
	const char *id = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;

	fmt(dir, "%s/sys/devices/%s", root, path);
	mkdirs(dir);
	put_file(dir, "vendor", vendor);
	put_file(dir, "class", class);
	put_file(dir, "numa_node", numa);
	fmt(link, "%s/sys/bus/pci/devices", root);
	mkdirs(link);
	fmt(link, "%s/sys/bus/pci/devices/%s", root, id);
	fmt(target, "../../../devices/%s", path);
	assert_int_equal(symlink(target, link), 0);
}

struct tree *tree_build(const char *name)
{
	struct tree *t = calloc(1, sizeof(*t));
	char file[PATH_MAX], line[512];
	FILE *f;

	assert_non_null(t);
	snprintf(t->root, sizeof(t->root), "/tmp/zsm-pci-XXXXXX");
	assert_non_null(mkdtemp(t->root));
	fmt(file, "%s/%s.tree", ZSM_TEST_PCI_DIR, name);
	f = fopen(file, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char path[400], vendor[16], class[16], numa[16], link[PATH_MAX];

		if (sscanf(line, "dev %399s %15s %15s %15s", path, vendor,
			   class, numa) != 4)
			continue;
		add_dev(t->root, path, vendor, class, numa);
		if (strncmp(class, "0x02", 4) != 0)
			continue;
		assert_true(t->nnics < MAX_DEVS);
		fmt(link, "/sys/bus/pci/devices/%s",
			 strrchr(path, '/') + 1);
		zsm_assert_int_eq(zsm_pci_dev_read(t->root, link,
						   &t->nics[t->nnics]),
				  0);
		t->nnics++;
	}
	fclose(f);
	zsm_assert_int_eq(zsm_pci_gpus(t->root, t->gpus, MAX_DEVS, &t->ngpus),
			  0);
	return t;
}

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *w)
{
	(void)st;
	(void)flag;
	(void)w;
	return remove(p);
}

void tree_free(struct tree *t)
{
	nftw(t->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(t);
}

