/*
 * config.h - the configuration file parser: the whole public face of
 * src/config/.
 *
 * Portable and I/O-free, so the unikernel can parse a configuration baked into
 * its image with the same code as the Linux daemon: the caller reads the file
 * and hands over its bytes. Nothing is allocated; errors come back as one line
 * of text in a buffer the caller owns, "FILE:LINE: message".
 *
 * The format and every key are documented in docs/CONFIG.md. Parsing is
 * strict on purpose: an unknown key, a duplicate or a bad value refuses the
 * whole file, because a broker silently running with a setting it ignored is
 * worse than one that does not start.
 */
#ifndef TERN_CONFIG_H
#define TERN_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/bridge.h"
#include "broker/broker.h"

/* The only config_version this release reads. */
#define TERN_CONFIG_VERSION 1u

/* Enough for any message the parser writes (longer ones are cut short). */
#define TERN_CONFIG_ERR_SIZE 256u

/* Most keys a release knows (the parser tracks each with one bit). */
#define TERN_CONFIG_KEYS_MAX 64u
/* workers: the default, and the most I/O threads the daemon starts. */
#define TERN_WORKERS_DEFAULT 1u
#define TERN_WORKERS_MAX 64u

typedef enum tern_addr_family {
    TERN_ADDR_NONE = 0, /* listener not configured */
    TERN_ADDR_IPV4,
    TERN_ADDR_IPV6,
} tern_addr_family;

/* A listening address, already parsed to binary so no platform needs a
 * resolver. */
typedef struct tern_listen_addr {
    tern_addr_family family;
    uint8_t addr[16]; /* network byte order; IPv4 uses addr[0..3] */
    uint16_t port;    /* host byte order; 0 = the system picks a free port */
} tern_listen_addr;

/* Values in the units of the file (seconds, bytes, counts). Every field has
 * its real default after tern_config_defaults(); none uses 0 as "default". */
typedef struct tern_config_limits {
    uint32_t max_connections;
    uint32_t max_packet_size;
    uint32_t max_inflight;
    uint32_t max_queued;
    uint32_t max_queued_bytes;
    uint32_t max_out_bytes;
    uint32_t max_inbound_qos2;
    uint32_t connect_timeout_s;
    uint32_t max_retained;
    uint32_t max_retained_bytes;
    uint32_t work_budget;
    uint32_t publisher_hold_s; /* 0 = never hold publishers */
    uint32_t max_handshakes;             /* TLS handshakes running at once */
    uint32_t max_handshakes_per_address; /* of those, from one address */
    uint32_t max_input_bytes;            /* input buffered across connections */
    uint32_t max_subscriptions;
    uint32_t max_topic_levels;
    uint32_t max_topic_length;
    uint32_t max_sessions_per_identity;
    uint32_t max_queued_bytes_per_identity;
    uint32_t max_keepalive;   /* MQTT 5.0 Server Keep Alive cap, seconds */
    uint32_t max_topic_alias; /* 0 = no topic aliases from clients */
    uint32_t receive_maximum;
} tern_config_limits;

/* Longest path value (bytes, NUL included) and longest list value. Paths
 * are stored as written; a relative one is the platform's to resolve (the
 * Linux daemon: against the configuration file's directory). */
#define TERN_CONFIG_PATH_MAX 256u
#define TERN_CONFIG_LIST_MAX 1024u

/* tls.identity: where a client's identity comes from. */
typedef enum tern_config_identity {
    TERN_IDENTITY_CN = 0,
    TERN_IDENTITY_SAN_DNS,
    TERN_IDENTITY_SAN_EMAIL,
    TERN_IDENTITY_SAN_URI,
} tern_config_identity;

/* tls.min_version, as 10 x the version number. */
typedef enum tern_config_tls_version {
    TERN_CONFIG_TLS_1_2 = 12,
    TERN_CONFIG_TLS_1_3 = 13,
} tern_config_tls_version;

/* The mutual-TLS listener's settings (SPEC C3). Empty strings = not set. */
typedef struct tern_config_tls {
    char cert[TERN_CONFIG_PATH_MAX];        /* server certificate chain, PEM */
    char key[TERN_CONFIG_PATH_MAX];         /* its private key, PEM */
    char client_ca[TERN_CONFIG_PATH_MAX];   /* CAs of accepted clients, PEM */
    char operator_ca[TERN_CONFIG_PATH_MAX]; /* CAs of operators, PEM; optional */
    char operators[TERN_CONFIG_LIST_MAX];   /* comma-separated identities; optional */
    tern_config_identity identity;
    tern_config_tls_version min_version;
    bool require_client_cert;
    uint32_t handshake_timeout_s;
} tern_config_tls;

/* store.sync: when a commit reaches the disk (docs/STORE.md). */
typedef enum tern_config_store_sync {
    TERN_STORE_SYNC_FULL = 0, /* before it is acknowledged: survives power loss */
    TERN_STORE_SYNC_NORMAL,   /* at the next checkpoint: may lose the last commits */
} tern_config_store_sync;

/* store.disk: which disk holds the unikernel's store (issue 13). */
typedef enum tern_config_disk_kind {
    TERN_DISK_AUTO = 0,    /* the first disk with a tern data partition */
    TERN_DISK_NONE,        /* no disk: RAM only */
    TERN_DISK_VIRTIO_BLK,  /* the first virtio-blk disk */
    TERN_DISK_VIRTIO_SCSI, /* the first disk behind virtio-scsi */
    TERN_DISK_PCI,         /* the disk of the PCI function at bus:dev.fn */
} tern_config_disk_kind;

typedef struct tern_config_disk {
    tern_config_disk_kind kind;
    uint8_t bus, dev, fn; /* TERN_DISK_PCI only */
} tern_config_disk;

/* store.cache_size's default and bounds, in KiB: SQLite's own default of
 * about 2 MiB, at least 64 KiB, at most 1 GiB. */
#define TERN_STORE_CACHE_KIB_DEFAULT 2048u
/* The unikernel's disk scrubber (store.scrub_rate, store.scrub_interval). */
#define TERN_SCRUB_RATE_KIB_DEFAULT 512u
#define TERN_SCRUB_RATE_KIB_MAX 1048576u
#define TERN_SCRUB_INTERVAL_S_DEFAULT 86400u
#define TERN_SCRUB_INTERVAL_S_MAX 2592000u
#define TERN_STORE_CACHE_KIB_MIN 64u
#define TERN_STORE_CACHE_KIB_MAX 1048576u

/* An IPv4 address with a prefix length (net.ipv4, net.gateway). */
typedef struct tern_config_ipv4 {
    bool set;
    uint8_t addr[4]; /* network byte order */
    uint8_t prefix;  /* 1..32; 32 for a single address */
} tern_config_ipv4;

/* time.*: the unikernel's SNTP client (SPEC B4, docs/CONFIG.md). The
 * daemon keeps the host's clock and ignores them. */
#define TERN_TIME_SERVERS_MAX 8u        /* items in time.sntp_servers */
#define TERN_TIME_SERVERS_TEXT 192u     /* its text: 8 x "255.255.255.255:65535," */
#define TERN_TIME_MAX_STEP_S_DEFAULT 1000u
#define TERN_TIME_MAX_STEP_S_MAX 31536000u /* a year */
#define TERN_TIME_RESYNC_S_DEFAULT 1024u
#define TERN_TIME_RESYNC_S_MIN 16u
#define TERN_TIME_RESYNC_S_MAX 86400u

/* One time.sntp_servers item. */
typedef struct tern_sntp_server {
    uint8_t addr[4]; /* network byte order; always RFC 1918 */
    uint16_t port;   /* 123 unless the item says :PORT */
} tern_sntp_server;

typedef struct tern_config_time {
    char sntp_servers[TERN_TIME_SERVERS_TEXT]; /* "" = no SNTP: the RTC alone */
    uint32_t max_step_s;
    uint32_t resync_interval_s;
} tern_config_time;

/* net.*: the unikernel's network interface. The Linux daemon uses the
 * host's network and only says at start-up that these are not its to use. */
typedef struct tern_config_net {
    tern_config_ipv4 ipv4;    /* not set: DHCP */
    tern_config_ipv4 gateway; /* not set: none (on-link traffic only) */
} tern_config_net;

/* bridge.NAME.*: bridges to other brokers (SPEC C7, ADR-060, docs/CONFIG.md).
 * The Linux daemon runs them; the unikernel refuses the keys for now. */
#define TERN_BRIDGES_MAX 4u
#define TERN_BRIDGE_NAME_MAX 32u   /* NUL included: names of 1..31 [A-Za-z0-9_-] */
#define TERN_BRIDGE_TEXT_MAX 128u  /* client_id, identity (NUL included) */
#define TERN_BRIDGE_TOPICS_MAX 512u
#define TERN_BRIDGE_KEEPALIVE_DEFAULT 60u
#define TERN_BRIDGE_RECONNECT_MIN_DEFAULT 1u
#define TERN_BRIDGE_RECONNECT_MAX_DEFAULT 60u
/* The lines each bridge key was set on (index: the bridge key table in
 * src/config/bridge.c). */
#define TERN_BRIDGE_KEYS 13u

typedef struct tern_config_bridge {
    char name[TERN_BRIDGE_NAME_MAX];
    tern_listen_addr address;                /* required */
    char topics[TERN_BRIDGE_TOPICS_MAX];     /* required: "PATTERN DIR QOS [LP [RP]]", ... */
    char client_id[TERN_BRIDGE_TEXT_MAX];    /* "" = "tern-bridge-NAME" */
    char identity[TERN_BRIDGE_TEXT_MAX];     /* "" = "bridge:NAME" */
    char tls_ca[TERN_CONFIG_PATH_MAX];       /* "" = plaintext to the remote */
    char tls_cert[TERN_CONFIG_PATH_MAX];     /* client certificate, PEM; optional */
    char tls_key[TERN_CONFIG_PATH_MAX];
    char tls_name[TERN_BRIDGE_TEXT_MAX];     /* "" = the remote's name not checked */
    uint32_t keepalive_s;
    uint32_t reconnect_min_s, reconnect_max_s;
    bool try_private;
    uint8_t protocol;                        /* toward the remote: 4 (3.1.1) or 5 */
    uint32_t key_line[TERN_BRIDGE_KEYS];
} tern_config_bridge;

typedef struct tern_config {
    uint32_t version;
    tern_listen_addr listener_plain; /* family NONE = no plaintext listener */
    tern_listen_addr listener_tls;   /* family NONE = no TLS listener */
    tern_listen_addr listener_ws;    /* family NONE = no WebSocket listener */
    tern_listen_addr listener_wss;   /* family NONE = no WebSocket-over-TLS listener */
    tern_config_tls tls;
    char acl_file[TERN_CONFIG_PATH_MAX]; /* "" = no ACL file */
    char password_file[TERN_CONFIG_PATH_MAX]; /* "" = none: user names/passwords refused */
    char store_path[TERN_CONFIG_PATH_MAX]; /* "" = no persistence (memory only) */
    tern_config_store_sync store_sync;
    uint32_t store_backup_interval_s;      /* 0 = backups on demand only */
    uint32_t telemetry_interval_s;         /* statistics into the unikernel's journal; 0 = none */
    uint32_t store_cache_kib;              /* SQLite's page cache bound */
    tern_config_disk store_disk;           /* the unikernel's; the daemon uses store_path */
    uint32_t store_scrub_rate_kib;         /* the unikernel's disk scrubber, KiB/s; 0 = off */
    uint32_t store_scrub_interval_s;       /* from one scrub pass's start to the next's */
    broker_log_level log_level;
    tern_config_limits limits;
    uint32_t session_expiry_s; /* 0 = kept forever */
    uint32_t sys_interval_s;   /* 0 = $SYS updates off */
    uint32_t workers;          /* the daemon's network threads: 1 = one thread for
                                  everything; N >= 2: N I/O threads beside the core
                                  thread (ADR-061). The unikernel ignores it. */
    bool allow_anonymous;
    bool allow_plaintext_passwords; /* passwords checked on plaintext listeners too */
    bool sys_public;           /* every client may read $SYS (development) */
    bool retain_available;     /* mqtt.retain_available: retained messages served */
    bool shared_subscriptions; /* mqtt.shared_subscriptions: $share/GROUP/FILTER served */
    tern_config_net net;
    tern_config_time time;
    tern_config_bridge bridges[TERN_BRIDGES_MAX];
    uint32_t nbridges;
    /* Where each key was set, for messages about its value found later
     * (a certificate that does not load): read with tern_config_line(). */
    uint32_t key_line[TERN_CONFIG_KEYS_MAX];
} tern_config;

/* The servers of time.sntp_servers (validated by tern_config_parse) into
 * out[0..max); returns how many. */
size_t tern_config_sntp_servers(const tern_config *cfg, tern_sntp_server *out, size_t max);

/* A bridge's settings for the core's bridge (broker/bridge.h): its topic
 * mappings parsed (tern_config_parse validated them), defaults applied. */
void tern_config_bridge_settings(const tern_config_bridge *cb, bridge_settings *out);
/* Its local identity ("bridge:NAME" unless configured). */
const char *tern_config_bridge_identity(const tern_config_bridge *cb, char *buf, size_t n);
/* The line of bridge key `field` ("address", "tls_ca", ...) of cb; 0 when
 * not set. */
size_t tern_config_bridge_line(const tern_config_bridge *cb, const char *field);

/* Fill cfg with the defaults of every key (no listener). */
void tern_config_defaults(tern_config *cfg);

/*
 * Parse `len` bytes of configuration text (need not be NUL-terminated).
 * `file` names the source in error messages only. On success fills *cfg
 * (defaults for every key the text leaves out) and returns true. On failure
 * returns false, leaves *cfg untouched and writes a NUL-terminated
 * "FILE:LINE: message" into err (cut short to err_size; err may be NULL when
 * err_size is 0).
 */
bool tern_config_parse(tern_config *cfg, const char *file, const char *text, size_t len,
                       char *err, size_t err_size);

/*
 * The line of `key` (e.g. "tls.cert") in the file cfg was parsed from; 0
 * when the file did not set it (its default) or cfg was not parsed.
 */
size_t tern_config_line(const tern_config *cfg, const char *key);

/*
 * Translate the parsed settings into the broker core's terms (limits, log
 * level, anonymous access). Only those fields of *out are written; the
 * allocator, log callback and version are the platform's to set.
 */
void tern_config_to_broker(const tern_config *cfg, broker_config *out);

#endif
