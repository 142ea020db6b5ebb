/* SPDX-License-Identifier: MIT */
/* Between the plugin's lifetime (plugin.c) and its entry points (entry.c). */
#ifndef ZSM_CORE_PLUGIN_H
#define ZSM_CORE_PLUGIN_H

/*
 * First thing in every entry point: 0, or -ECHILD in a process forked
 * after init, where nothing of the parent's may be used (said once).
 */
int zsm_plugin_enter(const char *call);
/* Teardown calls in such a child: 1 when they must do nothing. */
int zsm_plugin_in_child(const char *call);
/* 0 when the plugin is up and dev is one of its devices, else -EINVAL. */
int zsm_plugin_dev_check(int dev);

#endif
