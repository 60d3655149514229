/*
 * test_kscsi_parse.c - the virtio-scsi and SCSI parsers (dev/scsi_parse.c)
 * on the host: the device configuration (defaults required), response
 * headers with sense in fixed and descriptor formats (and lengths that lie
 * about the bytes behind them), the classification that drives retries
 * (unit attention, busy, reset) and refusals (invalid operation code: not
 * supported; bad target: no disk), INQUIRY, REPORT LUNS, READ
 * CAPACITY(16) with 512/4096 and 4096/4096 disks and bad values, the VPD
 * pages 0x00, 0xB0 and 0xB2 cut short, and MODE SENSE(6)/(10) caching
 * pages behind block descriptors and other pages.
 */
#include "test.h"

#include "platform/kernel/dev/scsi_parse.c"

static void p32le(uint8_t *c, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        c[i] = (uint8_t)(v >> (8 * i));
}

static void p32be(uint8_t *c, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        c[i] = (uint8_t)(v >> (24 - 8 * i));
}

TEST(kscsi_config_needs_a_queue_and_the_default_sizes)
{
    uint8_t c[VSCSI_CFG_BYTES] = {0};
    p32le(c + VSCSI_CFG_NUM_QUEUES, 1);
    p32le(c + VSCSI_CFG_SEG_MAX, 126);
    p32le(c + VSCSI_CFG_MAX_SECTORS, 65535);
    p32le(c + VSCSI_CFG_SENSE_SIZE, 96);
    p32le(c + VSCSI_CFG_CDB_SIZE, 32);
    c[VSCSI_CFG_MAX_TARGET] = 255;
    p32le(c + VSCSI_CFG_MAX_LUN, 16383);
    struct vscsi_config v;
    const char *err;
    CHECK_EQ(vscsi_parse_config(c, sizeof c, &v, &err), 0);
    CHECK_EQ(v.seg_max, 126);
    CHECK_EQ(v.max_target, 255);
    CHECK_EQ(v.max_lun, 16383);
    CHECK_EQ(vscsi_parse_config(c, sizeof c - 1, &v, &err), -1);
    p32le(c + VSCSI_CFG_SENSE_SIZE, 252);
    CHECK_EQ(vscsi_parse_config(c, sizeof c, &v, &err), -1);
    CHECK(strstr(err, "sense"));
    p32le(c + VSCSI_CFG_SENSE_SIZE, 96);
    p32le(c + VSCSI_CFG_NUM_QUEUES, 0);
    CHECK_EQ(vscsi_parse_config(c, sizeof c, &v, &err), -1);
}

/* A response with CHECK CONDITION and the given sense bytes. */
static void check_resp(uint8_t r[VSCSI_RESP_BYTES], uint32_t sense_len, const uint8_t *sense,
                       size_t n)
{
    memset(r, 0, VSCSI_RESP_BYTES);
    p32le(r, sense_len);
    r[10] = SCSI_STATUS_CHECK;
    memcpy(r + 12, sense, n);
}

TEST(kscsi_sense_fixed_and_descriptor_formats_classify)
{
    uint8_t r[VSCSI_RESP_BYTES];
    struct scsi_result res;
    /* Fixed format, unit attention 29/00 (power on, reset). */
    uint8_t ua[18] = {0x70, 0, 0x06, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0x29, 0x00};
    check_resp(r, 18, ua, sizeof ua);
    vscsi_resp_parse(r, &res);
    CHECK(res.sense.valid);
    CHECK_EQ(res.sense.key, SCSI_KEY_UNIT_ATTENTION);
    CHECK_EQ(res.sense.asc, 0x29);
    CHECK_EQ(scsi_classify(&res), SCSI_RETRY);
    /* Descriptor format, illegal request 20/00: invalid operation code. */
    uint8_t inv[8] = {0x72, 0x05, 0x20, 0x00, 0, 0, 0, 0};
    check_resp(r, 8, inv, sizeof inv);
    vscsi_resp_parse(r, &res);
    CHECK_EQ(scsi_classify(&res), SCSI_UNSUPPORTED);
    char text[64];
    scsi_result_text(&res, text, sizeof text);
    CHECK(strcmp(text, "illegal request 20/00") == 0);
    /* Medium error: an error, not retried. */
    uint8_t med[18] = {0xF0, 0, 0x03, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0x11, 0x00};
    check_resp(r, 18, med, sizeof med);
    vscsi_resp_parse(r, &res);
    CHECK_EQ(scsi_classify(&res), SCSI_ERROR);
    /* Fixed format whose additional length stops before the ASC. */
    uint8_t shortfix[18] = {0x70, 0, 0x05, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0x20, 0x00};
    check_resp(r, 18, shortfix, sizeof shortfix);
    vscsi_resp_parse(r, &res);
    CHECK(res.sense.valid && res.sense.asc == 0);
    CHECK_EQ(scsi_classify(&res), SCSI_ERROR);
    /* A sense length larger than the buffer is clamped; one of 0 means no
     * sense, and a check condition without sense is an error. */
    check_resp(r, 0xFFFFFFFF, ua, sizeof ua);
    vscsi_resp_parse(r, &res);
    CHECK(res.sense.valid);
    check_resp(r, 0, ua, sizeof ua);
    vscsi_resp_parse(r, &res);
    CHECK(!res.sense.valid);
    CHECK_EQ(scsi_classify(&res), SCSI_ERROR);
    /* Unknown response code format. */
    uint8_t junk[4] = {0x12, 0x06, 0, 0};
    check_resp(r, 4, junk, sizeof junk);
    vscsi_resp_parse(r, &res);
    CHECK(!res.sense.valid);
}

TEST(kscsi_data_protect_sense_is_write_protected_others_are_not)
{
    uint8_t r[VSCSI_RESP_BYTES];
    struct scsi_result res;
    /* Fixed format, data protect 27/00: write protected. */
    uint8_t wp[18] = {0x70, 0, 0x07, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0x27, 0x00};
    check_resp(r, 18, wp, sizeof wp);
    vscsi_resp_parse(r, &res);
    CHECK(scsi_write_protected(&res));
    CHECK_EQ(scsi_classify(&res), SCSI_ERROR);
    /* Descriptor format, the same. */
    uint8_t wpd[8] = {0x72, 0x07, 0x27, 0x00, 0, 0, 0, 0};
    check_resp(r, 8, wpd, sizeof wpd);
    vscsi_resp_parse(r, &res);
    CHECK(scsi_write_protected(&res));
    /* A medium error, a check condition without sense, good status: not. */
    uint8_t med[18] = {0x70, 0, 0x03, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0x11, 0x00};
    check_resp(r, 18, med, sizeof med);
    vscsi_resp_parse(r, &res);
    CHECK(!scsi_write_protected(&res));
    check_resp(r, 0, wp, sizeof wp);
    vscsi_resp_parse(r, &res);
    CHECK(!scsi_write_protected(&res));
    check_resp(r, 18, wp, sizeof wp);
    r[10] = SCSI_STATUS_GOOD;
    vscsi_resp_parse(r, &res);
    CHECK(!scsi_write_protected(&res));
}

TEST(kscsi_transport_responses_classify)
{
    struct scsi_result r = {.response = VSCSI_S_BAD_TARGET};
    CHECK_EQ(scsi_classify(&r), SCSI_NO_TARGET);
    r.response = VSCSI_S_RESET;
    CHECK_EQ(scsi_classify(&r), SCSI_RETRY);
    r.response = VSCSI_S_OVERRUN;
    CHECK_EQ(scsi_classify(&r), SCSI_ERROR);
    r.response = 200;
    CHECK_EQ(scsi_classify(&r), SCSI_ERROR);
    r = (struct scsi_result){.status = SCSI_STATUS_BUSY};
    CHECK_EQ(scsi_classify(&r), SCSI_RETRY);
    r.status = 0x18;                         /* reservation conflict */
    CHECK_EQ(scsi_classify(&r), SCSI_ERROR);
    r.status = SCSI_STATUS_GOOD;
    CHECK_EQ(scsi_classify(&r), SCSI_GOOD);
    r = (struct scsi_result){.status = SCSI_STATUS_CHECK,
                             .sense = {true, SCSI_KEY_ILLEGAL_REQUEST, 0x25, 0}};
    CHECK_EQ(scsi_classify(&r), SCSI_NO_TARGET);
    r.sense = (struct scsi_sense){true, SCSI_KEY_NOT_READY, 0x04, 0x01};
    CHECK_EQ(scsi_classify(&r), SCSI_RETRY);
    r.sense = (struct scsi_sense){true, SCSI_KEY_NOT_READY, 0x3A, 0};
    CHECK_EQ(scsi_classify(&r), SCSI_ERROR);  /* medium not present */
    r.sense = (struct scsi_sense){true, SCSI_KEY_RECOVERED, 0, 0};
    CHECK_EQ(scsi_classify(&r), SCSI_GOOD);
}

TEST(kscsi_inquiry_and_report_luns)
{
    uint8_t inq[36] = {0x00, 0, 5, 0x12, 31};
    memcpy(inq + 8, "QEMU    ", 8);
    memcpy(inq + 16, "QEMU HARDDISK   ", 16);
    struct scsi_inquiry q;
    CHECK_EQ(scsi_inquiry_parse(inq, 36, &q), 0);
    CHECK_EQ(q.qualifier, 0);
    CHECK_EQ(q.type, 0);
    CHECK(strcmp(q.vendor, "QEMU") == 0 && strcmp(q.product, "QEMU HARDDISK") == 0);
    CHECK_EQ(scsi_inquiry_parse(inq, 35, &q), -1);
    inq[0] = 0x7F;                           /* no device here */
    CHECK_EQ(scsi_inquiry_parse(inq, 36, &q), 0);
    CHECK_EQ(q.qualifier, 3);

    uint8_t rl[8 + 5 * 8] = {0};
    p32be(rl, 5 * 8);
    rl[8 + 1] = 0;                           /* peripheral, LUN 0 */
    rl[16] = 0x40 | 0x01, rl[17] = 0x02;     /* flat, LUN 258 */
    rl[24] = 0x80;                           /* logical unit addressing: skipped */
    rl[32] = 0x00, rl[33] = 3, rl[34] = 0x40; /* second level: skipped */
    rl[40] = 0x01, rl[41] = 7;               /* peripheral with a bus: skipped */
    uint16_t luns[8];
    unsigned skipped;
    CHECK_EQ(scsi_report_luns_parse(rl, sizeof rl, luns, 8, &skipped), 2);
    CHECK_EQ(luns[0], 0);
    CHECK_EQ(luns[1], 258);
    CHECK_EQ(skipped, 3);
    /* A list length beyond the data is cut to the data. */
    p32be(rl, 0xFFFFFFF8);
    CHECK_EQ(scsi_report_luns_parse(rl, 8 + 12, luns, 8, &skipped), 1);
    CHECK_EQ(scsi_report_luns_parse(rl, sizeof rl, luns, 1, &skipped), 1);
    CHECK_EQ(scsi_report_luns_parse(rl, 7, luns, 8, &skipped), 0);
}

TEST(kscsi_read_capacity_16_topologies_and_bad_values)
{
    uint8_t d[32] = {0};
    struct scsi_capacity c;
    const char *err;
    d[6] = 0x01, d[7] = 0xFF;                /* last LBA 511 */
    p32be(d + 8, 512);
    d[13] = 3;                               /* 8 logical per physical */
    d[14] = 0x80 | 0x40;
    CHECK_EQ(scsi_readcap16_parse(d, 32, &c, &err), 0);
    CHECK_EQ(c.blocks, 512);
    CHECK_EQ(c.block_len, 512);
    CHECK_EQ(c.physical, 4096);
    CHECK(c.lbpme && c.lbprz);
    p32be(d + 8, 4096);
    d[13] = 0;
    CHECK_EQ(scsi_readcap16_parse(d, 32, &c, &err), 0);
    CHECK_EQ(c.physical, 4096);
    CHECK_EQ(scsi_readcap16_parse(d, 31, &c, &err), -1);
    d[13] = 9;                               /* 2 MiB physical */
    CHECK_EQ(scsi_readcap16_parse(d, 32, &c, &err), -1);
    d[13] = 0;
    p32be(d + 8, 520);
    CHECK_EQ(scsi_readcap16_parse(d, 32, &c, &err), -1);
    p32be(d + 8, 512);
    memset(d, 0xFF, 8);
    CHECK_EQ(scsi_readcap16_parse(d, 32, &c, &err), -1);
}

TEST(kscsi_vpd_pages_within_their_stated_and_received_length)
{
    uint8_t sup[] = {0, 0x00, 0, 5, 0x00, 0x80, 0x83, 0xB0, 0xB2, 0xB1};
    CHECK(scsi_vpd_lists(sup, sizeof sup, 0xB0));
    CHECK(scsi_vpd_lists(sup, sizeof sup, 0xB2));
    CHECK(!scsi_vpd_lists(sup, sizeof sup, 0xB1));   /* beyond the stated length */
    CHECK(!scsi_vpd_lists(sup, 8, 0xB2));            /* beyond what arrived */
    sup[1] = 0x80;
    CHECK(!scsi_vpd_lists(sup, sizeof sup, 0xB0));   /* not the supported-pages page */

    uint8_t b0[64] = {0, 0xB0, 0, 0x3C};
    p32be(b0 + 8, 4096);                             /* max transfer */
    p32be(b0 + 12, 128);                             /* optimal transfer */
    p32be(b0 + 20, 2097152);                         /* max unmap */
    p32be(b0 + 24, 255);
    b0[43] = 0x40;                                   /* max write same 64 */
    struct scsi_block_limits bl;
    CHECK_EQ(scsi_vpd_b0_parse(b0, sizeof b0, &bl), 0);
    CHECK_EQ(bl.max_transfer, 4096);
    CHECK_EQ(bl.opt_transfer, 128);
    CHECK_EQ(bl.max_unmap, 2097152);
    CHECK_EQ(bl.max_write_same, 64);
    CHECK_EQ(scsi_vpd_b0_parse(b0, 20, &bl), 0);     /* cut short: later fields 0 */
    CHECK_EQ(bl.opt_transfer, 128);
    CHECK_EQ(bl.max_unmap, 0);
    CHECK_EQ(bl.max_write_same, 0);
    b0[3] = 8;                                       /* the page says it is short */
    CHECK_EQ(scsi_vpd_b0_parse(b0, sizeof b0, &bl), 0);
    CHECK_EQ(bl.max_transfer, 4096);
    CHECK_EQ(bl.opt_transfer, 0);
    CHECK_EQ(scsi_vpd_b0_parse(sup, sizeof sup, &bl), -1);

    uint8_t b2[8] = {0, 0xB2, 0, 4, 0, 0xE0 | 0x04, 2, 0};
    struct scsi_provisioning pv;
    CHECK_EQ(scsi_vpd_b2_parse(b2, sizeof b2, &pv), 0);
    CHECK(pv.lbpu && pv.lbpws && pv.lbprz);
    CHECK_EQ(scsi_vpd_b2_parse(b2, 5, &pv), -1);
}

TEST(kscsi_mode_sense_caching_page_found_behind_descriptors_and_pages)
{
    /* MODE SENSE(10): header, one 8-byte block descriptor, an error
     * recovery page (0x01), then caching (0x08) with WCE. */
    uint8_t d[8 + 8 + 12 + 20] = {0};
    d[1] = sizeof d - 2;
    d[3] = 0x10;                                     /* DPOFUA */
    d[7] = 8;
    d[16] = 0x01, d[17] = 10;
    d[28] = 0x08, d[29] = 18, d[30] = 0x04;
    struct scsi_caching c;
    CHECK_EQ(scsi_mode_caching_parse(d, sizeof d, true, &c), 0);
    CHECK(c.page && c.wce && c.dpofua && !c.write_protected);
    d[30] = 0;
    CHECK_EQ(scsi_mode_caching_parse(d, sizeof d, true, &c), 0);
    CHECK(c.page && !c.wce);
    CHECK_EQ(scsi_mode_caching_parse(d, 29, true, &c), 0);   /* cut before byte 2 */
    CHECK(!c.page);
    d[7] = 200;                                      /* descriptors beyond the data */
    CHECK_EQ(scsi_mode_caching_parse(d, sizeof d, true, &c), 0);
    CHECK(!c.page);
    d[7] = 8;
    d[17] = 0xFF;                                    /* a page running past the end */
    CHECK_EQ(scsi_mode_caching_parse(d, sizeof d, true, &c), 0);
    CHECK(!c.page);
    CHECK_EQ(scsi_mode_caching_parse(d, 7, true, &c), -1);

    /* MODE SENSE(6), write protected, no descriptors, caching first. */
    uint8_t s[4 + 20] = {sizeof s - 1, 0, 0x80, 0, 0x08 | 0x80, 18, 0x04};
    CHECK_EQ(scsi_mode_caching_parse(s, sizeof s, false, &c), 0);
    CHECK(c.page && c.wce && c.write_protected && !c.dpofua);
    s[4] = 0x48;                                     /* subpage format: not page 8/0 */
    CHECK_EQ(scsi_mode_caching_parse(s, sizeof s, false, &c), 0);
    CHECK(!c.page);
}
