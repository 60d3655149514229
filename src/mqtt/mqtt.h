/*
 * mqtt.h - the MQTT wire codec: the whole public face of src/mqtt/.
 *
 * Pure functions, no allocation, no I/O. Decoding validates a packet
 * completely and returns views (pointer + length) into the caller's buffer,
 * so a decoded packet is only valid while that buffer is. Encoding writes into
 * a caller-provided buffer and never writes past its capacity.
 *
 * Versions: MQTT 3.1 (protocol level 3), 3.1.1 (level 4) and 5.0 (level 5).
 * At level 5 packets carry a property block and reason codes: the decoder
 * validates every property (its identifier, its type, the packets it may
 * appear in, "at most once", the values the specification allows) and
 * fills an mqtt_props with the single-valued ones and a view of the whole
 * block for the repeated ones (user properties, subscription identifiers);
 * encoders take property blocks already encoded with mqtt_prop_*().
 */
#ifndef TERN_MQTT_H
#define TERN_MQTT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    MQTT_LEVEL_31 = 3,  /* "MQIsdp" */
    MQTT_LEVEL_311 = 4, /* "MQTT" */
    MQTT_LEVEL_5 = 5,   /* "MQTT" */
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
    MQTT_AUTH = 15,     /* level 5 only */
} mqtt_type;

/* One error enum for every reader and writer in the codec. MQTT_OK is 0;
 * MQTT_NEED_MORE is not an error but "the buffer holds no whole packet yet". */
typedef enum mqtt_err {
    MQTT_OK = 0,
    MQTT_NEED_MORE,             /* incomplete packet: read more bytes */
    MQTT_ERR_LENGTH_ENCODING,   /* Remaining Length longer than 4 bytes or non-minimal */
    MQTT_ERR_TOO_LARGE,         /* packet exceeds the caller's maximum size */
    MQTT_ERR_BAD_TYPE,          /* packet type 0, 15 (AUTH) below level 5, or a type
                                   this side may not send */
    MQTT_ERR_BAD_FLAGS,         /* reserved fixed-header flag bits wrong */
    MQTT_ERR_TRUNCATED,         /* a field runs past the end of the packet */
    MQTT_ERR_TRAILING_BYTES,    /* bytes left over after the last field */
    MQTT_ERR_BAD_UTF8,          /* ill-formed UTF-8, surrogate, or U+0000 */
    MQTT_ERR_BAD_PROTOCOL_NAME, /* not "MQTT" (level 4) / "MQIsdp" (level 3) */
    MQTT_ERR_BAD_PROTOCOL_LEVEL,/* name fine, level unsupported: CONNACK 0x01 */
    MQTT_ERR_BAD_CONNECT_FLAGS, /* reserved bit, will/user/password flag rules */
    MQTT_ERR_BAD_QOS,           /* QoS 3 */
    MQTT_ERR_BAD_TOPIC_NAME,    /* empty (level 5: without a Topic Alias), or contains + or # */
    MQTT_ERR_BAD_TOPIC_FILTER,  /* empty, or misplaced + or # */
    MQTT_ERR_ZERO_PACKET_ID,    /* packet identifier 0 where one is required */
    MQTT_ERR_NO_TOPICS,         /* SUBSCRIBE/UNSUBSCRIBE without any filter */
    MQTT_ERR_BAD_SUBACK_CODE,   /* SUBACK return code other than 0,1,2,0x80 */
    MQTT_ERR_BAD_CONNACK,       /* CONNACK flags/return code out of range */
    MQTT_ERR_BUFFER_FULL,       /* encoder: output capacity too small */
    /* Level 5 only. mqtt_err_reason() gives the DISCONNECT reason code
     * the specification names for each error. */
    MQTT_ERR_BAD_PROPERTY,      /* unknown identifier, not allowed in this packet, or
                                   a value not of its type: malformed (0x81) */
    MQTT_ERR_DUP_PROPERTY,      /* a property allowed once appears twice (0x82) */
    MQTT_ERR_BAD_PROPERTY_VALUE,/* a value the spec forbids: Receive Maximum 0,
                                   Maximum Packet Size 0, a 0/1 byte above 1,
                                   Subscription Identifier 0 (0x82) */
    MQTT_ERR_BAD_TOPIC_ALIAS,   /* Topic Alias 0 (0x94). An empty topic without an alias
                                   is MQTT_ERR_BAD_TOPIC_NAME (a Protocol Error, 0x82) */
    MQTT_ERR_BAD_REASON_CODE,   /* a reason code not defined for this packet (0x81) */
    MQTT_ERR_BAD_SUB_OPTIONS,   /* Retain Handling 3, or No Local on a shared
                                   subscription filter (0x82) */
    MQTT_ERR__COUNT
} mqtt_err;

/* Short constant text for logs, e.g. "reserved flag bits set". Never NULL. */
const char *mqtt_err_str(mqtt_err err);

/* The MQTT 5.0 reason code a server sends in DISCONNECT (or CONNACK, for a
 * bad CONNECT) for a decode error: 0x81 malformed packet, 0x82 protocol
 * error, 0x95 packet too large, 0x94 topic alias invalid, 0x84 unsupported
 * protocol version (err.c says which is which). Not meaningful for MQTT_OK /
 * MQTT_NEED_MORE / MQTT_ERR_BUFFER_FULL (0x80 unspecified). */
uint8_t mqtt_err_reason(mqtt_err err);

/* MQTT 5.0 reason codes (section 2.4), every one the specification defines.
 * Which packet may carry which is checked by the decoder. */
enum {
    MQTT_RC_SUCCESS = 0x00,              /* also Normal disconnection, Granted QoS 0 */
    MQTT_RC_GRANTED_QOS_1 = 0x01,
    MQTT_RC_GRANTED_QOS_2 = 0x02,
    MQTT_RC_DISCONNECT_WITH_WILL = 0x04,
    MQTT_RC_NO_MATCHING_SUBSCRIBERS = 0x10,
    MQTT_RC_NO_SUBSCRIPTION_EXISTED = 0x11,
    MQTT_RC_CONTINUE_AUTHENTICATION = 0x18,
    MQTT_RC_RE_AUTHENTICATE = 0x19,
    MQTT_RC_UNSPECIFIED_ERROR = 0x80,
    MQTT_RC_MALFORMED_PACKET = 0x81,
    MQTT_RC_PROTOCOL_ERROR = 0x82,
    MQTT_RC_IMPLEMENTATION_SPECIFIC = 0x83,
    MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION = 0x84,
    MQTT_RC_CLIENT_ID_NOT_VALID = 0x85,
    MQTT_RC_BAD_USERNAME_OR_PASSWORD = 0x86,
    MQTT_RC_NOT_AUTHORIZED = 0x87,
    MQTT_RC_SERVER_UNAVAILABLE = 0x88,
    MQTT_RC_SERVER_BUSY = 0x89,
    MQTT_RC_BANNED = 0x8A,
    MQTT_RC_SERVER_SHUTTING_DOWN = 0x8B,
    MQTT_RC_BAD_AUTHENTICATION_METHOD = 0x8C,
    MQTT_RC_KEEP_ALIVE_TIMEOUT = 0x8D,
    MQTT_RC_SESSION_TAKEN_OVER = 0x8E,
    MQTT_RC_TOPIC_FILTER_INVALID = 0x8F,
    MQTT_RC_TOPIC_NAME_INVALID = 0x90,
    MQTT_RC_PACKET_ID_IN_USE = 0x91,
    MQTT_RC_PACKET_ID_NOT_FOUND = 0x92,
    MQTT_RC_RECEIVE_MAXIMUM_EXCEEDED = 0x93,
    MQTT_RC_TOPIC_ALIAS_INVALID = 0x94,
    MQTT_RC_PACKET_TOO_LARGE = 0x95,
    MQTT_RC_MESSAGE_RATE_TOO_HIGH = 0x96,
    MQTT_RC_QUOTA_EXCEEDED = 0x97,
    MQTT_RC_ADMINISTRATIVE_ACTION = 0x98,
    MQTT_RC_PAYLOAD_FORMAT_INVALID = 0x99,
    MQTT_RC_RETAIN_NOT_SUPPORTED = 0x9A,
    MQTT_RC_QOS_NOT_SUPPORTED = 0x9B,
    MQTT_RC_USE_ANOTHER_SERVER = 0x9C,
    MQTT_RC_SERVER_MOVED = 0x9D,
    MQTT_RC_SHARED_SUBS_NOT_SUPPORTED = 0x9E,
    MQTT_RC_CONNECTION_RATE_EXCEEDED = 0x9F,
    MQTT_RC_MAXIMUM_CONNECT_TIME = 0xA0,
    MQTT_RC_SUB_IDS_NOT_SUPPORTED = 0xA1,
    MQTT_RC_WILDCARD_SUBS_NOT_SUPPORTED = 0xA2,
};

/* MQTT 5.0 property identifiers (section 2.2.2.2). All are below 64, so a
 * set of them is a uint64_t with bit (1 << id). */
enum {
    MQTT_PROP_PAYLOAD_FORMAT = 0x01,         /* byte: PUBLISH, will */
    MQTT_PROP_MESSAGE_EXPIRY = 0x02,         /* u32: PUBLISH, will */
    MQTT_PROP_CONTENT_TYPE = 0x03,           /* string: PUBLISH, will */
    MQTT_PROP_RESPONSE_TOPIC = 0x08,         /* string (topic name): PUBLISH, will */
    MQTT_PROP_CORRELATION_DATA = 0x09,       /* binary: PUBLISH, will */
    MQTT_PROP_SUBSCRIPTION_ID = 0x0B,        /* varint 1..268435455: PUBLISH (server,
                                                repeatable), SUBSCRIBE (once) */
    MQTT_PROP_SESSION_EXPIRY = 0x11,         /* u32: CONNECT, CONNACK, DISCONNECT */
    MQTT_PROP_ASSIGNED_CLIENT_ID = 0x12,     /* string: CONNACK */
    MQTT_PROP_SERVER_KEEP_ALIVE = 0x13,      /* u16: CONNACK */
    MQTT_PROP_AUTH_METHOD = 0x15,            /* string: CONNECT, CONNACK, AUTH */
    MQTT_PROP_AUTH_DATA = 0x16,              /* binary: CONNECT, CONNACK, AUTH */
    MQTT_PROP_REQUEST_PROBLEM_INFO = 0x17,   /* byte 0/1: CONNECT */
    MQTT_PROP_WILL_DELAY = 0x18,             /* u32: will */
    MQTT_PROP_REQUEST_RESPONSE_INFO = 0x19,  /* byte 0/1: CONNECT */
    MQTT_PROP_RESPONSE_INFO = 0x1A,          /* string: CONNACK */
    MQTT_PROP_SERVER_REFERENCE = 0x1C,       /* string: CONNACK, DISCONNECT */
    MQTT_PROP_REASON_STRING = 0x1F,          /* string: CONNACK, acks, SUBACK, UNSUBACK,
                                                DISCONNECT, AUTH */
    MQTT_PROP_RECEIVE_MAXIMUM = 0x21,        /* u16 > 0: CONNECT, CONNACK */
    MQTT_PROP_TOPIC_ALIAS_MAXIMUM = 0x22,    /* u16: CONNECT, CONNACK */
    MQTT_PROP_TOPIC_ALIAS = 0x23,            /* u16 > 0: PUBLISH */
    MQTT_PROP_MAXIMUM_QOS = 0x24,            /* byte 0/1: CONNACK */
    MQTT_PROP_RETAIN_AVAILABLE = 0x25,       /* byte 0/1: CONNACK */
    MQTT_PROP_USER_PROPERTY = 0x26,          /* string pair, repeatable: every packet
                                                with properties */
    MQTT_PROP_MAXIMUM_PACKET_SIZE = 0x27,    /* u32 > 0: CONNECT, CONNACK */
    MQTT_PROP_WILDCARD_SUB_AVAILABLE = 0x28, /* byte 0/1: CONNACK */
    MQTT_PROP_SUB_ID_AVAILABLE = 0x29,       /* byte 0/1: CONNACK */
    MQTT_PROP_SHARED_SUB_AVAILABLE = 0x2A,   /* byte 0/1: CONNACK */
};

#define MQTT_PROP_BIT(id) ((uint64_t)1 << (id))
/* Largest Subscription Identifier (a variable byte integer). */
#define MQTT_MAX_SUBSCRIPTION_ID 268435455u

/* A view into the decode buffer. Not NUL-terminated. */
typedef struct mqtt_bytes {
    const uint8_t *p;
    size_t len;
} mqtt_bytes;

/*
 * A decoded property block (level 5). `raw` is the block as on the wire
 * without its length prefix (len 0: no properties); `present` has
 * MQTT_PROP_BIT(id) set for each identifier seen. The single-valued
 * properties are copied out below (0 / empty when absent: test `present`);
 * repeated ones (User Property, a server's Subscription Identifiers) are
 * walked with mqtt_prop_next() over `raw`. Views point into the decode
 * buffer. At levels 3 and 4 a decoded mqtt_props is all zero, except a
 * PUBLISH's and a PUBACK / PUBREC / PUBREL / PUBCOMP's: there only
 * `present` (0) and `raw` (empty) are set, the rest left as it was (the
 * 3.1.1 hot path does not pay for zeroing the block); at level 5 the same
 * holds for those packets when they carry no property: whatever reads a
 * field tests `present` first.
 */
typedef struct mqtt_props {
    mqtt_bytes raw;
    uint64_t present;
    uint32_t message_expiry;       /* seconds */
    uint32_t session_expiry;       /* seconds; UINT32_MAX = never */
    uint32_t will_delay;           /* seconds */
    uint32_t maximum_packet_size;
    uint32_t subscription_id;      /* the first one */
    uint16_t receive_maximum;
    uint16_t topic_alias_maximum;
    uint16_t topic_alias;
    uint16_t server_keep_alive;
    uint8_t payload_format;        /* 0 unspecified bytes, 1 UTF-8 */
    uint8_t request_problem_info;  /* default 1 when absent: test `present` */
    uint8_t request_response_info;
    uint8_t maximum_qos;
    uint8_t retain_available;
    uint8_t wildcard_sub_available;
    uint8_t sub_id_available;
    uint8_t shared_sub_available;
    uint32_t user_property_count;
    mqtt_bytes content_type;
    mqtt_bytes response_topic;
    mqtt_bytes correlation_data;
    mqtt_bytes assigned_client_id;
    mqtt_bytes auth_method;
    mqtt_bytes auth_data;
    mqtt_bytes response_info;
    mqtt_bytes server_reference;
    mqtt_bytes reason_string;
} mqtt_props;

/* One property, as mqtt_prop_next() walks a block. */
typedef struct mqtt_prop {
    uint8_t id;
    uint32_t value;     /* byte, u16, u32 and varint properties */
    mqtt_bytes data;    /* string and binary properties; a user property's name */
    mqtt_bytes data2;   /* a user property's value */
} mqtt_prop;

/* Walk a property block the decoder already validated (or one built with
 * mqtt_prop_*()): returns false at the end. *pos starts at 0. */
bool mqtt_prop_next(const mqtt_bytes *raw, size_t *pos, mqtt_prop *out);

/*
 * Property writers: each appends one property (identifier + value) to
 * out[0..cap) and returns the bytes written, or 0 when cap is too small.
 * The caller concatenates them into a block and passes it to a level-5
 * encoder. The id must be of the writer's type (asserted).
 */
size_t mqtt_prop_u8(uint8_t *out, size_t cap, uint8_t id, uint8_t v);
size_t mqtt_prop_u16(uint8_t *out, size_t cap, uint8_t id, uint16_t v);
size_t mqtt_prop_u32(uint8_t *out, size_t cap, uint8_t id, uint32_t v);
size_t mqtt_prop_varint(uint8_t *out, size_t cap, uint8_t id, uint32_t v);
size_t mqtt_prop_bytes(uint8_t *out, size_t cap, uint8_t id, const uint8_t *p, size_t len);
size_t mqtt_prop_pair(uint8_t *out, size_t cap, uint8_t id, const uint8_t *k, size_t klen,
                      const uint8_t *v, size_t vlen);
/* Bytes of a variable byte integer: 1..4. */
size_t mqtt_varint_size(uint32_t v);

/* Copy the properties of a valid block except those in drop_mask
 * (MQTT_PROP_BIT set) to out[0..cap), in their order; returns the bytes
 * written, or SIZE_MAX when cap is too small. A broker uses it to keep
 * what it forwards from an inbound PUBLISH (dropping Topic Alias, Message
 * Expiry and Subscription Identifier, which it sets per delivery). */
size_t mqtt_props_filter(const mqtt_bytes *raw, uint64_t drop_mask, uint8_t *out, size_t cap);

typedef struct mqtt_connect {
    uint8_t level;         /* 3, 4 or 5 */
    /* Levels 3/4: the level byte had 0x80 set, the bridge convention of
     * Mosquitto's try_private (ADR-060): the client is a bridge, so the
     * server neither echoes its publishes back nor clears their retain. */
    bool bridge;
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
    mqtt_props props;      /* level 5: CONNECT properties */
    mqtt_props will_props; /* level 5: will properties (when will_flag) */
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
    uint8_t return_code;   /* level 5: the reason code */
    mqtt_props props;
} mqtt_connack;

typedef struct mqtt_publish {
    uint8_t qos;
    bool dup;
    bool retain;
    uint16_t packet_id;  /* 0 for QoS 0, otherwise non-zero */
    mqtt_bytes topic;    /* valid topic name; level 5: may be empty when
                            props carry a Topic Alias */
    mqtt_bytes payload;  /* may be empty */
    mqtt_props props;    /* level 5; ignored by the encoders (they take blocks) */
} mqtt_publish;

/* PUBACK, PUBREC, PUBREL, PUBCOMP. At level 5 a missing reason code
 * decodes as MQTT_RC_SUCCESS. */
typedef struct mqtt_ack {
    uint16_t packet_id;
    uint8_t reason;
    mqtt_props props;
} mqtt_ack;

/* DISCONNECT and AUTH (level 5; a level 3/4 DISCONNECT decodes as reason
 * 0 without properties). */
typedef struct mqtt_reason_packet {
    uint8_t reason;
    mqtt_props props;
} mqtt_reason_packet;

/* SUBACK return code for a refused filter. */
#define MQTT_SUBACK_FAILURE 0x80u

/* SUBSCRIBE, UNSUBSCRIBE, SUBACK and UNSUBACK carry lists. The decoder
 * validates every entry; the iterators below then walk them without
 * re-checking. A level-3/4 UNSUBACK has no list (count 0). */
typedef struct mqtt_list {
    uint16_t packet_id;
    uint32_t count;      /* number of entries, >= 1 for (UN)SUBSCRIBE */
    mqtt_bytes raw;      /* the entries as on the wire */
    mqtt_props props;    /* level 5 */
} mqtt_list;

/* Subscription options byte (SUBSCRIBE). At levels 3/4 only the QoS bits
 * may be set (the decoder enforces it), so options == QoS there. */
#define MQTT_SUBOPT_QOS_MASK 0x03u
#define MQTT_SUBOPT_NO_LOCAL 0x04u
#define MQTT_SUBOPT_RETAIN_AS_PUBLISHED 0x08u
#define MQTT_SUBOPT_RETAIN_HANDLING_SHIFT 4u  /* 0 send, 1 send if new, 2 never */
#define MQTT_SUBOPT_RETAIN_HANDLING_MASK 0x30u

typedef struct mqtt_packet {
    mqtt_type type;
    uint8_t flags;       /* low nibble of the first byte */
    uint32_t size;       /* whole packet size in bytes, fixed header included */
    union {
        mqtt_connect connect;
        mqtt_connack connack;
        mqtt_publish publish;
        mqtt_ack ack;          /* PUBACK, PUBREC, PUBREL, PUBCOMP */
        mqtt_list subscribe;   /* entries: filter + options byte */
        mqtt_list suback;      /* entries: one return/reason code byte each */
        mqtt_list unsuback;    /* level 5 entries: one reason code each */
        mqtt_list unsubscribe; /* entries: filter */
        mqtt_reason_packet disconnect;
        mqtt_reason_packet auth;
    } u;
} mqtt_packet;

/* Which side's packets a decoder accepts: a broker decodes client packets,
 * a client (tests, bench, bridge) decodes server packets. */
typedef enum mqtt_role {
    MQTT_FROM_CLIENT, /* CONNECT PUBLISH PUBACK PUBREC PUBREL PUBCOMP SUBSCRIBE UNSUBSCRIBE PINGREQ
                         DISCONNECT, and AUTH at level 5 */
    MQTT_FROM_SERVER, /* CONNACK PUBLISH PUBACK PUBREC PUBREL PUBCOMP SUBACK UNSUBACK PINGRESP, and
                         DISCONNECT and AUTH at level 5 */
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

/* Iterate a decoded SUBSCRIBE: returns false at the end. *pos starts at 0.
 * *options is the whole options byte (MQTT_SUBOPT_*): the QoS at levels 3/4. */
bool mqtt_subscribe_next(const mqtt_list *l, size_t *pos, mqtt_bytes *filter, uint8_t *options);
/* Iterate a decoded UNSUBSCRIBE. */
bool mqtt_unsubscribe_next(const mqtt_list *l, size_t *pos, mqtt_bytes *filter);
/* Iterate a decoded SUBACK, or a level-5 UNSUBACK's reason codes. */
bool mqtt_suback_next(const mqtt_list *l, size_t *pos, uint8_t *code);

/* Validation helpers, shared with the broker and config code. */
bool mqtt_utf8_valid(const uint8_t *s, size_t len); /* MQTT rules: no U+0000, no surrogates */
bool mqtt_topic_name_valid(const uint8_t *s, size_t len);
bool mqtt_topic_filter_valid(const uint8_t *s, size_t len);
/*
 * Shared subscription syntax (MQTT 5.0 section 4.8.2), for a valid topic
 * filter f: 0 when f does not start with "$share/" (an ordinary filter);
 * 1 when it is "$share/NAME/FILTER" with NAME non-empty and free of '/',
 * '+' and '#' and FILTER non-empty ([MQTT-4.8.2-1], [MQTT-4.8.2-2]), with
 * *group = NAME and *filter = FILTER (views into f); -1 when it starts with
 * "$share/" but is malformed. The level-5 decoder refuses -1; at levels 3/4
 * it is the broker's call.
 */
int mqtt_share_split(const uint8_t *f, size_t len, mqtt_bytes *group, mqtt_bytes *filter);

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
/* PUBACK, PUBREC, PUBREL (flags 0x2 applied), PUBCOMP, UNSUBACK: 4 bytes.
 * At level 5 the publish acks come out as the 4-byte Success form; a 5.0
 * UNSUBACK carries a reason code per filter: mqtt_encode_suback5(). */
size_t mqtt_encode_ack(uint8_t *out, size_t cap, uint8_t level, mqtt_type type, uint16_t packet_id);
size_t mqtt_suback_size(uint8_t level, size_t count); /* count return codes */
size_t mqtt_encode_suback(uint8_t *out, size_t cap, uint8_t level, uint16_t packet_id,
                          const uint8_t *codes, size_t count);
/* PINGREQ, PINGRESP, DISCONNECT: 2 bytes. */
size_t mqtt_encode_empty(uint8_t *out, size_t cap, mqtt_type type);

/*
 * Level-5 encoders. `props` is the property block, already encoded with
 * mqtt_prop_*(), given in `nprops` pieces written one after another (so a
 * broker can put a message's forwarded properties and a delivery's own
 * beside each other without copying them together first); nprops 0 = no
 * properties. The level-3/4 encoders above also work at level 5 and then
 * write an empty property block (and, for acks, omit the reason code).
 */
size_t mqtt_publish5_size(size_t topic_len, size_t payload_len, uint8_t qos, size_t props_len);
size_t mqtt_encode_publish5(uint8_t *out, size_t cap, const mqtt_publish *p,
                            const mqtt_bytes *props, size_t nprops);
size_t mqtt_encode_connack5(uint8_t *out, size_t cap, bool session_present, uint8_t reason,
                            const mqtt_bytes *props, size_t nprops);
/* PUBACK, PUBREC, PUBREL, PUBCOMP; reason 0 without properties gives the
 * 4-byte short form. */
size_t mqtt_encode_ack5(uint8_t *out, size_t cap, mqtt_type type, uint16_t packet_id,
                        uint8_t reason, const mqtt_bytes *props, size_t nprops);
/* SUBACK (codes: reason codes) and UNSUBACK (its reason codes). */
size_t mqtt_encode_suback5(uint8_t *out, size_t cap, mqtt_type type, uint16_t packet_id,
                           const uint8_t *codes, size_t count, const mqtt_bytes *props,
                           size_t nprops);
/* DISCONNECT and AUTH; reason 0 without properties gives the 2-byte form. */
size_t mqtt_encode_reason5(uint8_t *out, size_t cap, mqtt_type type, uint8_t reason,
                           const mqtt_bytes *props, size_t nprops);

/* Client-side encoders (tests, load generator, bridges). At level 5 the
 * CONNECT's props.raw and will_props.raw are written as its property
 * blocks, and (UN)SUBSCRIBE take a property block (may be NULL) and
 * SUBSCRIBE whole options bytes (MQTT_SUBOPT_*). */
size_t mqtt_encode_connect(uint8_t *out, size_t cap, const mqtt_connect *c);
size_t mqtt_encode_subscribe5(uint8_t *out, size_t cap, uint16_t packet_id,
                              const mqtt_bytes *filters, const uint8_t *options, size_t count,
                              const mqtt_bytes *props);
size_t mqtt_encode_unsubscribe5(uint8_t *out, size_t cap, uint16_t packet_id,
                                const mqtt_bytes *filters, size_t count,
                                const mqtt_bytes *props);
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
