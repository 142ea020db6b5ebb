/* SPDX-License-Identifier: MIT */
/* Between the plugin's lifetime (lifetime.c) and its entry points. */
#ifndef ZSM_ENTRY_LIFETIME_H
#define ZSM_ENTRY_LIFETIME_H

/*
 * First thing in every entry point: 0, or -ECHILD in a process forked
 * after init, where nothing of the parent's may be used (said once).
 */
int zsm_entry_life_enter(const char *call);
/* Teardown calls in such a child: 1 when they must do nothing. */
int zsm_entry_life_in_child(const char *call);
/* 0 when the plugin is up and dev is one of its devices, else -EINVAL. */
int zsm_entry_life_dev_check(int dev);

#endif
