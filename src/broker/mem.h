/*
 * mem.h - the core's allocator (mem.c): every allocation goes through the
 * platform's broker_allocator and is accounted in broker_stats.memory_used.
 */
#ifndef TERN_BROKER_MEM_H
#define TERN_BROKER_MEM_H

#include "broker/broker.h"

#include <stddef.h>

void *bk_mem_alloc(broker *b, size_t size);
void *bk_mem_calloc(broker *b, size_t size);
void *bk_mem_realloc(broker *b, void *p, size_t size);
void bk_mem_free(broker *b, void *p);
char *bk_mem_strdup(broker *b, const char *s); /* NULL in, NULL out */

#endif
