/* url-host.h: what a controller URL says about where its traffic goes: the agent and cgorchctl
 * refuse plain HTTP beyond this host unless told to accept it (--plain-http). */
#pragma once

#include <stdbool.h>

/* Pure: whether url is plain http:// to a host that may not be this one (anything but
 * localhost and loopback addresses): signatures keep an agent's replies from being forged, not
 * from being read, and a task's command and environment travel in them, as tokens do in
 * cgorchctl's requests. A host name other than localhost counts as another host: it may resolve
 * to any address. */
bool url_is_plain_http_to_another_host(const char *url);

/* Where the agent and cgorchctl find the controller's certificate (or its CA) to pin when no
 * --ca-cert names one: a copy of the certificate the controller made (cgorch-controller(8),
 * --tls). Used when it exists; otherwise the system's CAs verify an https:// controller. */
#define CONTROLLER_CERT_DEFAULT SYSCONFDIR "/cgorch/controller.crt"

/* ca_file when given, else CONTROLLER_CERT_DEFAULT when it exists, else NULL (the system's
 * CAs). */
const char *controller_ca_file(const char *ca_file);
