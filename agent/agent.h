/* agent.h: the agent's task table — applies the controller's actions (start, set_limits,
 * freeze, thaw, kill) exactly once each, samples every task's cgroup, builds heartbeats
 * (task reports, exit records, acks) and forgets what the controller has received. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "cgroup.h"
#include "limits-policy.h"
#include "protocol.h"

#define AGENT_MAX_HEARTBEAT_BYTES_DEFAULT (1024 * 1024)  /* the controller's --max-body-size default */
#define AGENT_ACTIONS_REMEMBERED 4096  /* ids of applied actions, to ack a resent one without re-applying */

typedef enum AgentBpfSampling {
        AGENT_BPF_AUTO,    /* the BPF iterator when its helper loads it, else the files */
        AGENT_BPF_YES,     /* the BPF iterator or no start */
        AGENT_BPF_NO,      /* the files only */
} AgentBpfSampling;

typedef struct AgentConfig {
        const char *node;
        const char *proc_fs;
        double capacity_cpus;
        uint64_t capacity_memory_bytes;
        double speed;                   /* the node's speed class (1: the reference) */
        uint64_t sample_interval_us;
        unsigned max_samples_per_s;     /* task samples a second, at most: the interval stretches past it (0: no bound) */
        bool allow_root_tasks;
        uid_t min_uid;                  /* tasks run as no uid below it (task-user.h) */
        bool kill_on_exit;
        const char *state_dir;         /* per-task status and pid files, for re-adoption */
        const char *output_dir;        /* tasks' default output files: DIR/USER/... (task-output.h) */
        uint64_t output_max_bytes;     /* of one task's output and error together; 0: no cap */
        unsigned detail_every;         /* read the detail files every this many samples (1: every sample; 0: auto) */
        uint64_t sample_buffer_bytes;  /* all tasks' undelivered samples together, at most */
        uint64_t max_heartbeat_bytes;  /* a heartbeat body, at most (the samples that do not fit wait) */
        LimitsPolicy policy;
        AgentBpfSampling bpf_sampling;
        const char *bpf_helper;        /* NULL: next to the agent's executable, else PKGLIBEXECDIR */
} AgentConfig;

typedef struct Agent Agent;

/* Also re-adopts the tasks an earlier agent left running in the subtree (and reports those that
 * ended meanwhile). */
int agent_new(sd_event *e, CgroupBackend *cgroups, const AgentConfig *cfg, Agent **ret);
/* Stops sampling; kills the tasks if cfg->kill_on_exit; removes the cgroups of tasks that
 * have no process left. Running tasks are left alone otherwise. */
Agent *agent_free(Agent *a);

/* Asked when something worth telling the controller happened (a task ended). */
void agent_set_kick(Agent *a, void (*kick)(void *userdata), void *userdata);
/* Called after a sample tick that took a sample of at least one task (heartbeats follow it),
 * with the interval to the next tick (--sample-interval, stretched past max_samples_per_s). */
void agent_set_on_sampled(Agent *a, void (*sampled)(void *userdata, uint64_t interval_us), void *userdata);

/* For the reporter (see ReporterOps). The body stays the agent's: valid until the next
 * agent_build_heartbeat() or agent_free(). */
int agent_build_heartbeat(Agent *a, const char **ret_body);
void agent_handle_reply(Agent *a, const HeartbeatReply *reply);
void agent_heartbeat_failed(Agent *a);
/* The heartbeat protocol the controller speaks (its latest answer's Cgorch-Protocol; 0: none
 * named): from PROTO_VERSION_COMPACT on, heartbeats carry samples as rows and name tasks whose
 * report has not changed since an answered heartbeat by their id alone; from PROTO_VERSION_FENCED
 * on they say "fenced" while the lease has run out. */
void agent_set_protocol(Agent *a, unsigned version);

void agent_apply_action(Agent *a, const Action *action);

size_t agent_n_tasks(const Agent *a);
size_t agent_n_running(const Agent *a);
/* Tasks frozen by the self-fence, waiting for the controller to say thaw or kill. */
size_t agent_n_fenced(const Agent *a);
