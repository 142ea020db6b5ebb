/* SPDX-License-Identifier: MIT */
/*
 * idle-pair PLUGIN SECONDS: init the plugin, listen, connect one send comm
 * to that listener and accept it (one connected pair, in this process),
 * then do nothing for SECONDS and close everything.  bench/syscalls.sh
 * counts the system calls the plugin's threads make while it idles.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "zsm_client.h"

int main(int argc, char **argv)
{
	char handle[128] = { 0 };
	void *lc = NULL, *sc = NULL, *rc = NULL;
	const char *what = "";
	struct zsm_client *c;
	int secs, ndev = 0;

	if (argc != 3 || (secs = atoi(argv[2])) < 0) {
		fprintf(stderr, "usage: idle-pair PLUGIN SECONDS\n");
		return 2;
	}
	if (zsm_client_open(argv[1], 0, &c) || zsm_client_init(c, 1) ||
	    zsm_client_devices(c, &ndev) || ndev < 1) {
		fprintf(stderr, "idle-pair: the plugin did not start\n");
		return 1;
	}
	if (zsm_client_listen(c, 0, handle, &lc) ||
	    zsm_client_connect_accept(c, 0, handle, lc, &sc, &rc, 30000,
				      &what)) {
		fprintf(stderr, "idle-pair: %s failed\n", what);
		return 1;
	}
	printf("idle-pair: one listen comm and one connected pair, idle for "
	       "%d s\n",
	       secs);
	fflush(stdout);
	sleep((unsigned)secs);
	zsm_client_close_send(c, sc);
	zsm_client_close_recv(c, rc);
	zsm_client_close_listen(c, lc);
	zsm_client_finalize(c);
	zsm_client_close(c);
	return 0;
}
