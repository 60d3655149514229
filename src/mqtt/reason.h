/*
 * reason.h - internal to src/mqtt/: which MQTT 5.0 reason codes each packet
 * may carry, and from which side (the tables of sections 3.2.2.2, 3.4.2.1,
 * 3.5.2.1, 3.6.2.1, 3.7.2.1, 3.9.3, 3.11.3, 3.14.2.1 and 3.15.2.1).
 */
#ifndef TERN_MQTT_REASON_H
#define TERN_MQTT_REASON_H

#include "mqtt/mqtt.h"

/* May sender put reason code rc in a packet of this type? */
bool reason_allowed(mqtt_type type, mqtt_role sender, uint8_t rc);

#endif
