/*
 * mqtt.h - the MQTT wire codec: the whole public face of src/mqtt/.
 *
 * Pure functions, no allocation, no I/O. Decoding validates a packet
 * completely and returns views (pointer + length) into the caller's buffer,
 * so a decoded packet is only valid while that buffer is. Encoding writes into
 * a caller-provided buffer and never writes past its capacity.
 *
 * Versions: MQTT 3.1 (protocol level 3) and 3.1.1 (level 4). MQTT 5.0
 * (level 5) will add a property block to the packet structs and reason codes;
 * every decoder and encoder already takes the protocol level for that reason.
 */
#ifndef TERN_MQTT_H
#define TERN_MQTT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    MQTT_LEVEL_31 = 3,  /* "MQIsdp" */
    MQTT_LEVEL_311 = 4, /* "MQTT" */
    MQTT_LEVEL_5 = 5,   /* not yet accepted by the decoder */
};

/* Largest Remaining Length the four-byte variable integer can express. */
#define MQTT_MAX_REMAINING 268435455u
/* Largest fixed header: one type byte plus four length bytes. */
#define MQTT_MAX_FIXED_HEADER 5u

typedef enum mqtt_type {
    MQTT_CONNECT = 1,
    MQTT_CONNACK = 2,
    MQTT_PUBLISH = 3,
    MQTT_PUBACK = 4,
    MQTT_PUBREC = 5,
    MQTT_PUBREL = 6,
    MQTT_PUBCOMP = 7,
    MQTT_SUBSCRIBE = 8,
    MQTT_SUBACK = 9,
    MQTT_UNSUBSCRIBE = 10,
    MQTT_UNSUBACK = 11,
    MQTT_PINGREQ = 12,
    MQTT_PINGRESP = 13,
    MQTT_DISCONNECT = 14,
} mqtt_type;

/* One error enum for every reader and writer in the codec. MQTT_OK is 0;
 * MQTT_NEED_MORE is not an error but "the buffer holds no whole packet yet". */
typedef enum mqtt_err {
    MQTT_OK = 0,
    MQTT_NEED_MORE,             /* incomplete packet: read more bytes */
    MQTT_ERR_LENGTH_ENCODING,   /* Remaining Length longer than 4 bytes or non-minimal */
    MQTT_ERR_TOO_LARGE,         /* packet exceeds the caller's maximum size */
    MQTT_ERR_BAD_TYPE,          /* packet type 0/15, or a server-to-client type */
    MQTT_ERR_BAD_FLAGS,         /* reserved fixed-header flag bits wrong */
    MQTT_ERR_TRUNCATED,         /* a field runs past the end of the packet */
    MQTT_ERR_TRAILING_BYTES,    /* bytes left over after the last field */
    MQTT_ERR_BAD_UTF8,          /* ill-formed UTF-8, surrogate, or U+0000 */
    MQTT_ERR_BAD_PROTOCOL_NAME, /* not "MQTT" (level 4) / "MQIsdp" (level 3) */
    MQTT_ERR_BAD_PROTOCOL_LEVEL,/* name fine, level unsupported: CONNACK 0x01 */
    MQTT_ERR_BAD_CONNECT_FLAGS, /* reserved bit, will/user/password flag rules */
    MQTT_ERR_BAD_QOS,           /* QoS 3 */
    MQTT_ERR_BAD_TOPIC_NAME,    /* empty, or contains + or # */
    MQTT_ERR_BAD_TOPIC_FILTER,  /* empty, or misplaced + or # */
    MQTT_ERR_ZERO_PACKET_ID,    /* packet identifier 0 where one is required */
    MQTT_ERR_NO_TOPICS,         /* SUBSCRIBE/UNSUBSCRIBE without any filter */
    MQTT_ERR_BAD_SUBACK_CODE,   /* SUBACK return code other than 0,1,2,0x80 */
    MQTT_ERR_BAD_CONNACK,       /* CONNACK flags/return code out of range */
    MQTT_ERR_BUFFER_FULL,       /* encoder: output capacity too small */
    MQTT_ERR__COUNT
} mqtt_err;

/* Short constant text for logs, e.g. "reserved flag bits set". Never NULL. */
const char *mqtt_err_str(mqtt_err err);

/* A view into the decode buffer. Not NUL-terminated. */
typedef struct mqtt_bytes {
    const uint8_t *p;
    size_t len;
} mqtt_bytes;

typedef struct mqtt_connect {
    uint8_t level;         /* 3 or 4 */
    bool clean_session;
    bool will_flag;
    bool will_retain;
    uint8_t will_qos;
    bool username_flag;
    bool password_flag;
    uint16_t keepalive;    /* seconds, 0 = off */
    mqtt_bytes client_id;  /* may be empty (len 0) */
    mqtt_bytes will_topic; /* valid topic name when will_flag */
    mqtt_bytes will_payload;
    mqtt_bytes username;
    mqtt_bytes password;   /* binary */
} mqtt_connect;

/* CONNACK return codes (3.1.1 section 3.2.2.3). */
enum {
    MQTT_CONNACK_ACCEPTED = 0,
    MQTT_CONNACK_BAD_PROTOCOL = 1,
    MQTT_CONNACK_ID_REJECTED = 2,
    MQTT_CONNACK_UNAVAILABLE = 3,
    MQTT_CONNACK_BAD_CREDENTIALS = 4,
    MQTT_CONNACK_NOT_AUTHORIZED = 5,
};

typedef struct mqtt_connack {
    bool session_present;
    uint8_t return_code;
} mqtt_connack;

typedef struct mqtt_publish {
    uint8_t qos;
    bool dup;
    bool retain;
    uint16_t packet_id;  /* 0 for QoS 0, otherwise non-zero */
    mqtt_bytes topic;    /* valid topic name */
    mqtt_bytes payload;  /* may be empty */
} mqtt_publish;

/* SUBACK return code for a refused filter. */
#define MQTT_SUBACK_FAILURE 0x80u

/* SUBSCRIBE, UNSUBSCRIBE and SUBACK carry lists. The decoder validates every
 * entry; the iterators below then walk them without re-checking. */
typedef struct mqtt_list {
    uint16_t packet_id;
    uint32_t count;      /* number of entries, >= 1 for (UN)SUBSCRIBE */
    mqtt_bytes raw;      /* the entries as on the wire */
} mqtt_list;

typedef struct mqtt_packet {
    mqtt_type type;
    uint8_t flags;       /* low nibble of the first byte */
    uint32_t size;       /* whole packet size in bytes, fixed header included */
    union {
        mqtt_connect connect;
        mqtt_connack connack;
        mqtt_publish publish;
        uint16_t packet_id; /* PUBACK, PUBREC, PUBREL, PUBCOMP, UNSUBACK */
        mqtt_list subscribe;   /* entries: filter + options byte */
        mqtt_list suback;      /* entries: one return code byte each */
        mqtt_list unsubscribe; /* entries: filter */
    } u;
} mqtt_packet;

/* Which side's packets a decoder accepts: a broker decodes client packets,
 * a client (tests, bench, bridge) decodes server packets. */
typedef enum mqtt_role {
    MQTT_FROM_CLIENT, /* CONNECT PUBLISH PUBACK PUBREC PUBREL PUBCOMP SUBSCRIBE UNSUBSCRIBE PINGREQ DISCONNECT */
    MQTT_FROM_SERVER, /* CONNACK PUBLISH PUBACK PUBREC PUBREL PUBCOMP SUBACK UNSUBACK PINGRESP */
} mqtt_role;

/*
 * Decode one packet from the start of buf[0..len).
 *
 * level: the connection's protocol level (0 before CONNECT is seen: then only
 *   CONNECT is a valid first packet, but that rule is the broker's, not the
 *   codec's; level 0 decodes as 4).
 * max_size: largest whole packet accepted (fixed header included);
 *   0 means the protocol maximum.
 *
 * Returns MQTT_OK and fills *out and *consumed (the packet's size) on
 * success; MQTT_NEED_MORE when buf holds only a prefix of a valid packet
 * (*consumed untouched); an error otherwise. When the fixed header alone
 * shows the packet is too large, MQTT_ERR_TOO_LARGE is returned before
 * the rest arrives. Views in *out point into buf.
 */
mqtt_err mqtt_decode(const uint8_t *buf, size_t len, mqtt_role role, uint8_t level,
                     uint32_t max_size, mqtt_packet *out, size_t *consumed);

/*
 * Size of the packet starting at buf[0..len), from its fixed header alone
 * (the body is neither needed nor checked): MQTT_OK with *size, MQTT_NEED_MORE
 * while the header is incomplete, MQTT_ERR_LENGTH_ENCODING, or
 * MQTT_ERR_TOO_LARGE (max_size as for mqtt_decode). Lets a caller holding a
 * partial packet take exactly the bytes that complete it.
 */
mqtt_err mqtt_frame_size(const uint8_t *buf, size_t len, uint32_t max_size, uint32_t *size);

/* Iterate a decoded SUBSCRIBE: returns false at the end. *pos starts at 0. */
bool mqtt_subscribe_next(const mqtt_list *l, size_t *pos, mqtt_bytes *filter, uint8_t *qos);
/* Iterate a decoded UNSUBSCRIBE. */
bool mqtt_unsubscribe_next(const mqtt_list *l, size_t *pos, mqtt_bytes *filter);
/* Iterate a decoded SUBACK. */
bool mqtt_suback_next(const mqtt_list *l, size_t *pos, uint8_t *code);

/* Validation helpers, shared with the broker and config code. */
bool mqtt_utf8_valid(const uint8_t *s, size_t len); /* MQTT rules: no U+0000, no surrogates */
bool mqtt_topic_name_valid(const uint8_t *s, size_t len);
bool mqtt_topic_filter_valid(const uint8_t *s, size_t len);

/*
 * Encoders. Each writes one whole packet to out[0..cap) and returns its size,
 * or 0 when cap is too small (nothing useful written). mqtt_*_size() gives the
 * exact size first so callers can reserve space. Inputs are trusted (the
 * broker built them); encoders assert their invariants.
 */
size_t mqtt_publish_size(uint8_t level, size_t topic_len, size_t payload_len, uint8_t qos);
size_t mqtt_encode_publish(uint8_t *out, size_t cap, uint8_t level, const mqtt_publish *p);
size_t mqtt_encode_connack(uint8_t *out, size_t cap, uint8_t level, bool session_present,
                           uint8_t return_code);
/* PUBACK, PUBREC, PUBREL (flags 0x2 applied), PUBCOMP, UNSUBACK: 4 bytes. */
size_t mqtt_encode_ack(uint8_t *out, size_t cap, uint8_t level, mqtt_type type, uint16_t packet_id);
size_t mqtt_suback_size(uint8_t level, size_t count); /* count return codes */
size_t mqtt_encode_suback(uint8_t *out, size_t cap, uint8_t level, uint16_t packet_id,
                          const uint8_t *codes, size_t count);
/* PINGREQ, PINGRESP, DISCONNECT: 2 bytes. */
size_t mqtt_encode_empty(uint8_t *out, size_t cap, mqtt_type type);

/* Client-side encoders (tests, load generator, bridges). */
size_t mqtt_encode_connect(uint8_t *out, size_t cap, const mqtt_connect *c);
/* filters[i] with qos[i]; count >= 1. */
size_t mqtt_encode_subscribe(uint8_t *out, size_t cap, uint8_t level, uint16_t packet_id,
                             const mqtt_bytes *filters, const uint8_t *qos, size_t count);
size_t mqtt_encode_unsubscribe(uint8_t *out, size_t cap, uint8_t level, uint16_t packet_id,
                               const mqtt_bytes *filters, size_t count);

/* Topic matching: does topic name t match filter f? Implements + and #, and
 * the rule that a filter starting with + or # does not match a topic starting
 * with '$'. Both must already be valid. */
bool mqtt_topic_matches(const uint8_t *f, size_t flen, const uint8_t *t, size_t tlen);

#endif
