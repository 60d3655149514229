"""MQTT 5.0 with MQTT.js (the npm mqtt package, protocolVersion 5; pinned
in tests/integration/js/package.json, installed by `make setup`): topic
aliases, session expiry, shared subscriptions, user properties, reason
codes (CONNACK 0x8C, SUBACK 0x87, DISCONNECT 0x8E). The scenarios are in
js/runner.js; each prints what the clients saw and the test judges it.
"""

import pytest

from mqtt5clients import mqttjs, mqttjs_available

_ok, _why = mqttjs_available()
pytestmark = pytest.mark.skipif(not _ok, reason=_why)


def test_mqttjs_connack_reports_topic_alias_maximum_and_receive_maximum(broker):
    b = broker(limits_max_topic_alias=8, limits_receive_maximum=16)
    r = mqttjs("connack", b.port)
    assert r["reasonCode"] == 0
    assert r["properties"]["topicAliasMaximum"] == 8
    assert r["properties"]["receiveMaximum"] == 16


def test_mqttjs_topic_alias_publishes_reach_the_subscriber_under_the_real_topic(broker):
    # [MQTT-3.3.2-12]: the server accepts the alias MQTT.js set with the
    # first PUBLISH and resolves the empty-topic ones; what it sends the
    # subscriber (aliased or not, within the subscriber's 10
    # [MQTT-3.3.2-11]) MQTT.js resolves to the topic.
    b = broker(limits_max_topic_alias=10)
    r = mqttjs("aliases", b.port, topic="js/alias/t", count=5)
    assert r["serverTopicAliasMaximum"] == 10
    assert [(m["topic"], m["payload"]) for m in r["received"]] == [
        ("js/alias/t", "m%d" % i) for i in range(5)]
    assert all(m.get("alias") in (None, *range(1, 11)) for m in r["received"])


def test_mqttjs_session_with_expiry_keeps_messages_published_while_away(broker):
    # [MQTT-3.1.2-23], Session Present 1 [MQTT-3.2.2-3].
    b = broker()
    r = mqttjs("session", b.port, clientId="js-keep", topic="js/se/t", expiry=60)
    assert r == {"sessionPresent": True, "received": ["while-away"]}


def test_mqttjs_shared_subscription_members_split_the_messages(broker):
    b = broker()
    r = mqttjs("shared", b.port, group="jsg", topic="js/share/t", count=10)
    a, c = r["received"]
    assert sorted(a + c, key=lambda s: int(s[1:])) == ["s%d" % i for i in range(10)]
    assert a and c, r


def test_mqttjs_user_properties_arrive_with_repeated_names_and_content_type(broker):
    # [MQTT-3.3.2-17] [MQTT-3.3.2-18] [MQTT-3.3.2-20].
    b = broker()
    r = mqttjs("userprops", b.port, topic="js/up/t",
               userProperties={"site": "north", "tag": ["a", "b"]})
    assert r["properties"]["userProperties"] == {"site": "north", "tag": ["a", "b"]}
    assert r["properties"]["contentType"] == "text/plain"


def test_mqttjs_unsupported_authentication_method_is_refused_with_0x8c(broker):
    # [MQTT-4.12.0-1].
    b = broker()
    r = mqttjs("badauth", b.port, method="SCRAM-SHA-1")
    assert r["connected"] is False and r["code"] == 0x8C, r


@pytest.mark.tern_only
def test_mqttjs_suback_reason_codes_grant_qos_and_refuse_by_acl_with_0x87(broker, tmp_path):
    # [MQTT-3.8.4-7] / [MQTT-3.9.3-2]: a code per filter, the granted QoS
    # or a failure: 0x87 (Not authorized) for a filter the ACL refuses, in a
    # $share filter too (issue 15).
    acl = tmp_path / "acl"
    acl.write_text("topic readwrite js/open/#\n")
    b = broker(config={"acl.file": str(acl)})
    r = mqttjs("suback", b.port, filters=["js/open/t", "js/closed/t", "$share/g/js/open/t",
                                          "$share/g/js/closed/t"])
    codes = {x["filter"]: x.get("codes") for x in r["results"]}
    assert codes == {"js/open/t": [1], "js/closed/t": [0x87], "$share/g/js/open/t": [1],
                     "$share/g/js/closed/t": [0x87]}, r


@pytest.mark.tern_only
def test_mqttjs_taken_over_connection_gets_disconnect_0x8e(broker):
    # [MQTT-3.1.4-3]. (Mosquitto 2.0.11 closes without a DISCONNECT.)
    b = broker()
    r = mqttjs("takeover", b.port, clientId="js-twin")
    assert r["disconnect"] == {"reasonCode": 0x8E}
