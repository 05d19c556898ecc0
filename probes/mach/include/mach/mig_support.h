/* Stand-in for glibc's <mach/mig_support.h>, which gnumach-dev does not ship:
 * the MIG runtime the generated stubs call, implemented in task.c. */
#ifndef OSB_MIG_SUPPORT_H
#define OSB_MIG_SUPPORT_H
#include <mach/port.h>
#include <mach/message.h>
extern mach_port_t mig_get_reply_port(void);
extern void mig_dealloc_reply_port(mach_port_t);
extern void mig_put_reply_port(mach_port_t);
extern void *memcpy(void *, const void *, unsigned long);
extern void *memset(void *, int, unsigned long);
extern void mig_strncpy(char *dst, const char *src, int len);
extern mach_msg_return_t mach_msg(mach_msg_header_t *msg, mach_msg_option_t option,
    mach_msg_size_t send_size, mach_msg_size_t rcv_size, mach_port_name_t rcv_name,
    mach_msg_timeout_t timeout, mach_port_name_t notify);
#endif
