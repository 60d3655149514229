/*
 * lwipopts.h - lwIP configuration for tern (see lwip/opt.h for each
 * option). NO_SYS with the raw API: one thread, the main loop drives lwIP.
 * IPv4 only for now: ARP, ICMP echo, DHCP client, TCP.
 *
 * Sizing, for thousands of TCP connections on one core:
 *  - Heap data (segment copies, RAM pbufs) comes from the kernel heap
 *    (MEM_CUSTOM_ALLOCATOR), so MEM_SIZE does not apply: there is no separate
 *    fixed lwIP heap to run out of before kernel memory does.
 *  - Control blocks come from fixed pools (memp) so the number of
 *    connections is bounded and a flood cannot take all memory:
 *    4096 TCP PCBs, 16384 queued segments, 2048 receive pbufs.
 *  - A window of 44 MSS (64240 bytes, the largest without window
 *    scaling) and a send buffer of the same size keep a single stream fast
 *    over a high-latency path; memory is only used for bytes in flight, and
 *    out-of-order queues are capped per connection.
 * The fixed pools take about 4 MiB of .bss.
 */
#ifndef TERN_NET_LWIPOPTS_H
#define TERN_NET_LWIPOPTS_H

#define NO_SYS 1
#define SYS_LIGHTWEIGHT_PROT 0
#define LWIP_SOCKET 0
#define LWIP_NETCONN 0
#define LWIP_TIMERS 1

#define LWIP_IPV4 1
#define LWIP_IPV6 0
#define LWIP_ARP 1
#define LWIP_ETHERNET 1
#define LWIP_ICMP 1
#define LWIP_RAW 0
#define LWIP_UDP 1
#define LWIP_TCP 1
#define LWIP_DHCP 1
#define LWIP_DHCP_DOES_ACD_CHECK 0   /* address conflict detection costs seconds at boot */
#define LWIP_ACD 0
#define LWIP_AUTOIP 0
#define LWIP_DNS 0
#define LWIP_IGMP 0
#define IP_REASSEMBLY 1
#define IP_FRAG 1

#define LWIP_SINGLE_NETIF 1
#define LWIP_NETIF_STATUS_CALLBACK 1
#define LWIP_NETIF_LINK_CALLBACK 1
#define LWIP_NETIF_HOSTNAME 1
#define LWIP_NETIF_TX_SINGLE_PBUF 0

#define MEM_CUSTOM_ALLOCATOR 1
#define MEM_CUSTOM_MALLOC kmalloc
#define MEM_CUSTOM_FREE kfree
#define MEM_CUSTOM_CALLOC kcalloc
#define MEM_ALIGNMENT 8
#include "mm/kmalloc.h"

#define TCP_MSS 1460
#define TCP_WND (44 * TCP_MSS)
#define TCP_SND_BUF (44 * TCP_MSS)
#define TCP_SND_QUEUELEN (4 * TCP_SND_BUF / TCP_MSS)
#define TCP_SNDLOWAT (TCP_SND_BUF / 2)
#define TCP_QUEUE_OOSEQ 1
#define TCP_OOSEQ_MAX_PBUFS 16
#define TCP_OOSEQ_MAX_BYTES (16 * TCP_MSS)
#define LWIP_TCP_SACK_OUT 0
/* Counts each listener's half-open connections (accepts_pending), which
 * the SYN admission (serve/tcp.c) adds to what is running; past 255 of
 * them lwIP drops further SYNs silently too. */
#define TCP_LISTEN_BACKLOG 1
/* TIME_WAIT lasts 2 x MSL. lwIP (unlike Linux) refuses a new SYN for an
 * address pair it holds in TIME_WAIT, and clients and NATs reuse source
 * ports, so lwIP's two minutes made about one connection in a few hundred
 * hang in the kernel tests whenever the broker had to close first (serve/
 * tcp.c waits for the client's FIN when it can). Four seconds still
 * covers a segment delayed on any path a broker's clients use. */
#define TCP_MSL 2000UL

#define MEMP_NUM_TCP_PCB 4096
#define MEMP_NUM_TCP_PCB_LISTEN 16
#define MEMP_NUM_TCP_SEG 16384
#define MEMP_NUM_UDP_PCB 8
#define MEMP_NUM_PBUF 1024
#define MEMP_NUM_REASSDATA 8
#define IP_REASS_MAX_PBUFS 64
#define MEMP_NUM_ARP_QUEUE 64
#define PBUF_POOL_SIZE 2048
#define ARP_TABLE_SIZE 64
#define ARP_QUEUEING 1
/* lwIP's own timers plus the SNTP client's one (net/sntp.c). */
#define MEMP_NUM_SYS_TIMEOUT (LWIP_NUM_SYS_TIMEOUT_INTERNAL + 1)

#define LWIP_CHECKSUM_ON_COPY 1
#define LWIP_STATS 0
#define LWIP_STATS_DISPLAY 0

#endif
