/*
 * paging.h - the kernel's page tables (4-level, 4 KiB and 2 MiB pages).
 * Every mapping is either writable or executable, never both (W^X): vm_map
 * refuses VM_WRITE|VM_EXEC. Everything not executable carries NX. The
 * tables themselves are read-only in the direct map once paging_init has
 * switched to them; only this module writes them, through a short window.
 */
#ifndef TERN_MM_PAGING_H
#define TERN_MM_PAGING_H

#include "bootinfo.h"

#include <stddef.h>
#include <stdint.h>

enum {
    VM_READ = 0,        /* every mapping is readable */
    VM_WRITE = 1,
    VM_EXEC = 2,
    VM_UNCACHED = 4,    /* device memory */
    VM_WRITE_COMBINE = 8, /* framebuffers: writes batched, reads uncached */
};

/* Build the final tables from the memory map and switch to them: the kernel
 * image by section (text RX, rodata R, data/bss RW), RAM at DMAP_BASE (RW),
 * nothing at low addresses. */
void paging_init(const struct boot_info *bi);
/* On an application processor, once on the kernel's tables: the boot
 * CPU's PAT and global pages, as paging_init set them on CPU 0. */
void paging_cpu_init(void);
/* Map [va, va+len) to [pa, pa+len) with 4 KiB pages; both page-aligned. */
void vm_map(uint64_t va, uint64_t pa, size_t len, unsigned flags);
/* Remove 4 KiB mappings (leaves page table pages in place). Panics once
 * paging_share was called. */
void vm_unmap(uint64_t va, size_t len);
/* As vm_unmap, for an address only CPU 0 ever references (nothing any
 * other CPU runs holds a pointer into it, so no other TLB can cache it):
 * the ACPI reader's scratch page. Allowed after paging_share. */
void vm_unmap_private(uint64_t va, size_t len);
/* CPU 0, before another CPU starts kernel work that may touch any shared
 * mapping (the storage core, ADR-064): from now on vm_map may only add
 * mappings (a CPU caches no not-present entry, so none needs flushing
 * elsewhere) and vm_unmap panics - the check, always on, that stands in
 * for a TLB shootdown this kernel does not have. */
void paging_share(void);
/* Map device registers into the MMIO window (RW, NX, uncached); returns
 * their virtual address. A range whose address and length are multiples of
 * 2 MiB is mapped with 2 MiB pages (a 256 MiB PCI ECAM window then costs
 * one page table, not 128). */
void *vm_map_mmio(uint64_t pa, size_t len);
/* As vm_map_mmio, write-combining where the CPU has PAT (uncached
 * otherwise): for framebuffers, which are written, never read. */
void *vm_map_mmio_wc(uint64_t pa, size_t len);
/* Reserve len bytes (a page multiple) of the MMIO window, unmapped, for
 * short-lived mappings made with vm_map and removed with vm_unmap. */
uint64_t vm_window_reserve(size_t len);
/* 1 if va is mapped (any size of page). */
int vm_is_mapped(uint64_t va);
/* 1 if va is the direct-map alias of a page-table page (read-only after
 * paging_init): for the fatal report's cause. */
int vm_is_page_table(uint64_t va);

#endif
