/* SPDX-License-Identifier: MIT */
/*
 * The wire formats' numbers as the code has them, one line per wire, as
 * docs/design.md and docs/ce.md must state them (check-wire-doc.sh).
 */
#include <stdio.h>

#include "ce/ce_wire.h"
#include "net/net_wire.h"

int main(void)
{
	printf("net wire version %d: handle %zu bytes, control message %zu "
	       "bytes, signal message %zu bytes, offer %d bytes\n",
	       ZSM_HANDLE_VERSION, sizeof(struct zsm_net_handle),
	       sizeof(struct zsm_ctrl_msg), sizeof(struct zsm_sig_msg),
	       ZSM_OFFER_BYTES);
	printf("ce window version %d: %d slots of %zu bytes, window %zu "
	       "bytes, answer %zu bytes\n",
	       ZSM_CE_VERSION, ZSM_CE_SLOTS, sizeof(struct zsm_ce_slot),
	       sizeof(struct zsm_ce_window),
	       sizeof(struct zsm_ce_answer_msg));
	return 0;
}
