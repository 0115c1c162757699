/*
 * vk_exec.c — runs a hazard DAG on one Vulkan queue.
 *
 * A DAG is cut into segments in enqueue order: each maximal run of device
 * commands is one command buffer, each host command of a mixed plan (a
 * node the Vulkan table refused, run by the CPU's kernel on the host
 * arena) a segment of its own.  Every segment gets the next value of the
 * executor's timeline semaphore: a command buffer's submission waits for
 * the value before it and signals its own, and a host segment waits for
 * the value before it on the host, runs, and signals its value from the
 * host.  Host access (rule 4): wait() waits for the largest value among
 * the segments holding the commands it names, never for the whole queue.
 *
 * Inside a command buffer nothing is ordered but by barriers: each
 * dispatch (and transfer copy) first asks the barrier builder
 * (vk_barrier.c) which bytes of which buffers it must wait for, from the
 * DAG's edges, and records one vkCmdPipelineBarrier2 with a
 * VkBufferMemoryBarrier2 per range; dispatches that the DAG leaves
 * independent get none and may overlap on the device.  A command buffer
 * starts with a barrier that makes host writes (inputs, a host segment's
 * results in the host arena) visible, and ends with one that makes device
 * writes visible to the host; between segments the semaphore is the whole
 * dependency.
 *
 * The shared driver (runtime/drive.h) gives the start order (program
 * order, or a seeded random topological one), walks it to record (its
 * enqueue callback records a command into the open command buffer, its
 * host callback closes it and makes a host segment), checks cancel and
 * deadlines, and runs host commands (st_drive_host).
 *
 * Command buffers are recorded once per DAG and resubmitted on later runs
 * (the views, parameters and barriers of a DAG never change); a random
 * schedule (--schedule random) records a new seeded topological order
 * every run, so its barriers are rebuilt every run too.  Parameter blocks
 * live in host-visible buffers of the DAG's state, written at record
 * time.
 *
 * Profiling (--profile, runtime/profile.h): a profiled run records each
 * command between two timestamp queries (the start when the queue reaches
 * it, the end when everything before it has completed), and collect()
 * converts them to the host clock with an offset from a timestamp taken
 * between two host clock reads.  Dispatches the DAG leaves independent
 * may overlap on the device (the trace writer draws them on sub-lanes).
 * A DAG recorded without timestamps is recorded again the first
 * time it runs profiled.
 *
 * STRATA_VULKAN_STATS=1 prints, per recording, the commands, command
 * buffers, barriers and byte ranges (edge, api) and the conflicts the DAG
 * left unordered (missed), on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/kernels.h"
#include "backends/vulkan/vk_internal.h"
#include "core/status.h"
#include "runtime/dag.h"
#include "runtime/host.h"
#include "runtime/runctl.h"
#include "runtime/schedule.h"
#include "runtime/drive.h"
#include "runtime/profile.h"

#define PARAM_CHUNK (64 * 1024)
#define PARAM_ALIGN 256

typedef struct segment {
    bool host;
    int first, n;              /* into the state's order */
    VkCommandBuffer cb;
    uint64_t value;            /* the timeline value of its latest run */
} segment;

typedef struct param_chunk {
    st_vk_buffer *buf;
    uint64_t size, used;
} param_chunk;

typedef struct dag_state {
    const st_dag *dag;
    uint64_t *anc;
    int words;
    int *order, *seg_of;       /* enqueue order; each command's segment */
    segment *segs;
    int n_segs;
    bool recorded;
    VkCommandPool pool;
    param_chunk *chunks;
    int n_chunks, cap_chunks;
    uint64_t last;             /* the value of its latest run's last segment */
    bool timed;                /* recorded with timestamp queries (profiling) */
    VkQueryPool qpool;         /* 2 per command (start, end), then 1 for the clock offset */
    st_storage **scratch;      /* per command: its private scratch (st_vk_scratch), or NULL */
} dag_state;

struct st_vk_rec {
    st_vk_device *dev;
    dag_state *st;
    VkCommandBuffer cb;
    st_vk_tracker tr;
    VkPipeline bound;
};

typedef struct vk_exec {
    st_exec base;
    st_vk_device *dev;
    VkSemaphore timeline;
    uint64_t value;            /* the last value handed out */
    st_drive drive;            /* runtime/drive.h: the order, the run's cancel, its failure */
    bool whole;                /* --hazard-mode storage */
    int stats;
    st_host *host;
    int threads;
    dag_state *states;
    int n_states, cap_states;
    dag_state *cur;
    long valid_before;         /* validation messages before the run */
} vk_exec;

long st_vk_validation_errors(void);

/* ---- what kernels call ---- */

st_status st_vk_bind_view(const st_vk_ctx *c, const st_view *v, bool write, st_vk_bind *out)
{
    int64_t lo, hi;
    st_view_extent(v, &lo, &hi);
    memset(out, 0, sizeof *out);
    out->s = v->storage;
    out->write = write;
    if (hi <= lo || !v->storage) return ST_OK; /* empty: nothing bound, nothing touched */
    int64_t base = lo & ~(int64_t)(c->dev->align - 1);
    int64_t es = (int64_t)st_dtype_size(v->dtype);
    if (es <= 0 || (v->offset - base) % es != 0)
        return st_error(ST_ERR_INTERNAL, "vulkan: a %s view at byte %lld is not element-aligned", st_dtype_name(v->dtype),
                        (long long)v->offset);
    if ((uint64_t)(hi - base) > c->dev->max_range)
        return st_error(ST_ERR_INTERNAL, "vulkan: a view of %lld bytes exceeds maxStorageBufferRange (%llu) on '%s'",
                        (long long)(hi - base), (unsigned long long)c->dev->max_range, c->dev->name);
    out->lo = base;
    out->hi = hi;
    out->elem = (int32_t)((v->offset - base) / es);
    return ST_OK;
}

static st_status param_block(st_vk_rec *r, const int32_t *p, int np, st_vk_buffer **buf, uint64_t *off)
{
    dag_state *st = r->st;
    uint64_t need = (uint64_t)(np > 0 ? np : 1) * 4;
    param_chunk *ch = st->n_chunks ? &st->chunks[st->n_chunks - 1] : NULL;
    if (!ch || ch->used + need > ch->size) {
        if (st->n_chunks == st->cap_chunks) {
            int cap = st->cap_chunks ? st->cap_chunks * 2 : 4;
            param_chunk *v = realloc(st->chunks, (size_t)cap * sizeof *v);
            if (!v) return st_error(ST_ERR_NOMEM, "out of memory for parameter blocks");
            st->chunks = v;
            st->cap_chunks = cap;
        }
        uint64_t size = need > PARAM_CHUNK ? need : PARAM_CHUNK;
        st_vk_buffer *vb = NULL;
        ST_TRY(st_vk_host_buffer(r->dev, size, "vulkan parameters", &vb));
        ch = &st->chunks[st->n_chunks++];
        *ch = (param_chunk){vb, size, 0};
    }
    memcpy((char *)ch->buf->map + ch->used, p, (size_t)np * 4);
    *buf = ch->buf;
    *off = ch->used;
    ch->used = (ch->used + need + PARAM_ALIGN - 1) / PARAM_ALIGN * PARAM_ALIGN;
    return ST_OK;
}

static const VkPipelineStageFlags2 STAGES = VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT;

/* The barrier before accesses acc[0..n) of command cmd (vk_barrier.c). */
static st_status barrier_for(st_vk_rec *r, int cmd, const st_vk_access *acc, int n)
{
    st_vk_range ranges[64];
    int nr = st_vk_tracker_add(&r->tr, cmd, acc, n, ranges, 64);
    if (nr < 0) return st_error(ST_ERR_NOMEM, "vulkan: out of memory building barriers");
    if (nr == 0) return ST_OK;
    VkBufferMemoryBarrier2 bb[64];
    for (int i = 0; i < nr; i++) {
        bb[i] = (VkBufferMemoryBarrier2){VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER_2,
                                         NULL,
                                         STAGES,
                                         ranges[i].after_write ? VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT
                                                               : VK_ACCESS_2_NONE,
                                         STAGES,
                                         VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT |
                                             VK_ACCESS_2_TRANSFER_READ_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT,
                                         VK_QUEUE_FAMILY_IGNORED,
                                         VK_QUEUE_FAMILY_IGNORED,
                                         st_vk_buf_of(ranges[i].s),
                                         (VkDeviceSize)ranges[i].lo,
                                         (VkDeviceSize)(ranges[i].hi - ranges[i].lo)};
    }
    VkDependencyInfo di = {VK_STRUCTURE_TYPE_DEPENDENCY_INFO, NULL, 0, 0, NULL, (uint32_t)nr, bb, 0, NULL};
    vkCmdPipelineBarrier2(r->cb, &di);
    return ST_OK;
}

void st_vk_grid1(const st_vk_ctx *c, int64_t n, uint32_t wg, uint32_t groups[3])
{
    int64_t g = (n + wg - 1) / wg;
    int64_t gx = g < (int64_t)c->dev->max_groups[0] ? g : 65535;
    if (gx < 1) gx = 1;
    groups[0] = (uint32_t)gx;
    groups[1] = (uint32_t)((g + gx - 1) / gx);
    groups[2] = 1;
    if (groups[1] < 1) groups[1] = 1;
}

st_status st_vk_dispatch(st_vk_ctx *c, st_vks id, const int32_t *p, int np, int n_bind, const st_vk_bind *binds,
                         const uint32_t groups[3])
{
    st_vk_rec *r = c->rec;
    if (!groups[0] || !groups[1] || !groups[2]) return ST_OK;
    if (n_bind + 1 > ST_VK_MAX_BIND) return st_error(ST_ERR_INTERNAL, "vulkan: %d bindings for one dispatch", n_bind);
    for (int i = 0; i < 3; i++)
        if (groups[i] > c->dev->max_groups[i])
            return st_error(ST_ERR_INTERNAL, "vulkan: %s: %u work-groups in dim %d exceed the device's %u", st_vks_names[id],
                            groups[i], i, c->dev->max_groups[i]);
    VkPipeline pipe;
    ST_TRY(st_vk_pipeline(c->dev, id, &pipe));
    st_vk_access acc[ST_VK_MAX_BIND];
    int na = 0;
    for (int i = 0; i < n_bind; i++)
        if (binds[i].hi > binds[i].lo) acc[na++] = (st_vk_access){binds[i].s, binds[i].lo, binds[i].hi, c->cmd, binds[i].write};
    ST_TRY(barrier_for(r, c->cmd, acc, na));
    st_vk_buffer *pb = NULL;
    uint64_t poff = 0;
    ST_TRY(param_block(r, p, np, &pb, &poff));
    if (r->bound != pipe) {
        vkCmdBindPipeline(r->cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
        r->bound = pipe;
    }
    VkDescriptorBufferInfo bi[ST_VK_MAX_BIND];
    VkWriteDescriptorSet w[ST_VK_MAX_BIND];
    int nw = 0;
    bi[0] = (VkDescriptorBufferInfo){pb->buf, poff, (VkDeviceSize)(np > 0 ? np : 1) * 4};
    for (int i = 0; i < n_bind; i++) {
        if (binds[i].hi > binds[i].lo) bi[i + 1] = (VkDescriptorBufferInfo){st_vk_buf_of(binds[i].s), (VkDeviceSize)binds[i].lo,
                                                                            (VkDeviceSize)(binds[i].hi - binds[i].lo)};
        else bi[i + 1] = (VkDescriptorBufferInfo){pb->buf, poff, 4}; /* an empty operand: anything valid, never read */
    }
    for (int i = 0; i <= n_bind; i++)
        w[nw++] = (VkWriteDescriptorSet){VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, NULL, VK_NULL_HANDLE, (uint32_t)i, 0, 1,
                                         VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, NULL, &bi[i], NULL};
    c->dev->push_descriptor(r->cb, VK_PIPELINE_BIND_POINT_COMPUTE, c->dev->layout, 0, (uint32_t)nw, w);
    vkCmdDispatch(r->cb, groups[0], groups[1], groups[2]);
    return ST_OK;
}

st_status st_vk_scratch(st_vk_ctx *c, int64_t bytes, bool write, st_vk_bind *out)
{
    st_storage **s = &c->rec->st->scratch[c->cmd];
    if (bytes <= 0) return st_error(ST_ERR_INTERNAL, "vulkan: a scratch range of %lld bytes", (long long)bytes);
    /* a recording never runs while an earlier one of the DAG is pending,
     * so a smaller buffer is no longer in use when it is replaced */
    if (*s && (int64_t)(*s)->size < bytes) {
        st_storage_release(*s);
        *s = NULL;
    }
    if (!*s) {
        char label[64];
        snprintf(label, sizeof label, "scratch of command %d", c->cmd);
        ST_TRY(c->dev->base.storage_alloc(&c->dev->base, (uint64_t)bytes, label, s));
    }
    *out = (st_vk_bind){*s, 0, bytes, 0, write};
    return ST_OK;
}

st_status st_vk_copy_buffer(st_vk_ctx *c, const st_storage *src, int64_t src_off, const st_storage *dst, int64_t dst_off,
                            int64_t n)
{
    if (n <= 0) return ST_OK;
    st_vk_access acc[2] = {{src, src_off, src_off + n, c->cmd, false}, {dst, dst_off, dst_off + n, c->cmd, true}};
    ST_TRY(barrier_for(c->rec, c->cmd, acc, 2));
    VkBufferCopy region = {(VkDeviceSize)src_off, (VkDeviceSize)dst_off, (VkDeviceSize)n};
    vkCmdCopyBuffer(c->rec->cb, st_vk_buf_of(src), st_vk_buf_of(dst), 1, &region);
    return ST_OK;
}

/* A mixed plan's transfer (plan/transfer.c): both sides are buffers of
 * this device (the host arena is a host-visible VkBuffer), so it is one
 * copy in the command buffer, ordered by barriers like any dispatch. */
st_status st_vk_transfer(const st_kctx *k)
{
    st_vk_ctx *c = k->dev;
    const st_view *src = &k->views[0], *dst = &k->views[1];
    int64_t lo, hi;
    st_view_extent(src, &lo, &hi);
    if (hi <= lo) return ST_OK;
    int64_t dlo = dst->offset - (src->offset - lo);
    if (!src->storage->dev || !dst->storage->dev || src->storage->backend != &c->dev->base ||
        dst->storage->backend != &c->dev->base)
        return st_error(ST_ERR_INTERNAL, "vulkan: a transfer between '%s' and '%s', not both buffers of this device",
                        src->storage->label, dst->storage->label);
    return st_vk_copy_buffer(c, src->storage, lo, dst->storage, dlo, hi - lo);
}

/* ---- per-DAG state ---- */

static void state_free(vk_exec *e, dag_state *st)
{
    if (!st->dag) return;
    if (st->pool) vkDestroyCommandPool(e->dev->dev, st->pool, NULL);
    if (st->qpool) vkDestroyQueryPool(e->dev->dev, st->qpool, NULL);
    for (int i = 0; i < st->n_chunks; i++) {
        st_vk_buffer_free(e->dev, st->chunks[i].buf);
    }
    free(st->chunks);
    if (st->scratch)
        for (int i = 0; i < st->dag->n_cmds; i++)
            if (st->scratch[i]) st_storage_release(st->scratch[i]);
    free(st->scratch);
    free(st->anc);
    free(st->order);
    free(st->seg_of);
    free(st->segs);
    memset(st, 0, sizeof *st);
}

static st_status state_get(vk_exec *e, const st_dag *d, dag_state **out)
{
    for (int i = 0; i < e->n_states; i++)
        if (e->states[i].dag == d) {
            *out = &e->states[i];
            return ST_OK;
        }
    if (e->n_states == e->cap_states) {
        int cap = e->cap_states ? e->cap_states * 2 : 8;
        dag_state *s = realloc(e->states, (size_t)cap * sizeof *s);
        if (!s) return st_error(ST_ERR_NOMEM, "out of memory in the Vulkan executor");
        memset(s + e->cap_states, 0, (size_t)(cap - e->cap_states) * sizeof *s);
        if (e->cur) e->cur = s + (e->cur - e->states);
        e->states = s;
        e->cap_states = cap;
    }
    dag_state *st = &e->states[e->n_states];
    int n = d->n_cmds > 0 ? d->n_cmds : 1;
    st->dag = d;
    st->order = calloc((size_t)n, sizeof *st->order);
    st->seg_of = calloc((size_t)n, sizeof *st->seg_of);
    st->segs = calloc((size_t)n, sizeof *st->segs);
    st->scratch = calloc((size_t)n, sizeof *st->scratch);
    st_status r = st->order && st->seg_of && st->segs && st->scratch ? ST_OK : st_error(ST_ERR_NOMEM, "out of memory in the Vulkan executor");
    if (r == ST_OK) r = st_vk_ancestors(d, &st->anc, &st->words);
    if (r == ST_OK) {
        VkCommandPoolCreateInfo pi = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, NULL,
                                      VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, e->dev->queue_family};
        r = st_vk_check(vkCreateCommandPool(e->dev->dev, &pi, NULL, &st->pool), "vkCreateCommandPool");
    }
    if (r != ST_OK) {
        st->dag = d; /* so state_free frees */
        state_free(e, st);
        return r;
    }
    e->n_states++;
    *out = st;
    return ST_OK;
}

/* The recording walk's state: the open command buffer, if any. */
typedef struct walk {
    vk_exec *e;
    dag_state *st;
    st_vk_rec rec;
    segment *open;
    int pos;                   /* commands walked so far */
    bool timed;                /* bracket each command with timestamps */
} walk;

static void rec_stats(vk_exec *e, const st_vk_rec *rec, int n)
{
    if (!e->stats) return;
    fprintf(stderr,
            "vulkan stats: %d commands, 1 command buffer, %ld barriers, %ld ranges (%ld edge overlaps, %ld api overlaps), "
            "%ld unordered conflicts\n",
            n, rec->tr.barriers, rec->tr.ranges, rec->tr.edge_ranges, rec->tr.api_ranges, rec->tr.missed);
    if (rec->tr.missed)
        fprintf(stderr, "vulkan stats: the DAG left %ld conflicting accesses unordered: no barrier was made for them\n",
                rec->tr.missed);
}

/* Ends the open command buffer: device writes become visible to the host
 * once its value is reached. */
static st_status seg_close(walk *w)
{
    if (!w->open) return ST_OK;
    VkMemoryBarrier2 out = {VK_STRUCTURE_TYPE_MEMORY_BARRIER_2, NULL, STAGES,
                            VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_2_HOST_BIT,
                            VK_ACCESS_2_HOST_READ_BIT | VK_ACCESS_2_HOST_WRITE_BIT};
    VkDependencyInfo di = {VK_STRUCTURE_TYPE_DEPENDENCY_INFO, NULL, 0, 1, &out, 0, NULL, 0, NULL};
    vkCmdPipelineBarrier2(w->open->cb, &di);
    st_status r = st_vk_check(vkEndCommandBuffer(w->open->cb), "vkEndCommandBuffer");
    rec_stats(w->e, &w->rec, w->open->n);
    st_vk_tracker_free(&w->rec.tr);
    w->open = NULL;
    return r;
}

/* A new segment at the walk's position (its command buffer kept from an
 * earlier recording of the DAG when there was one). */
static segment *seg_new(walk *w, bool host)
{
    dag_state *st = w->st;
    segment *s = &st->segs[st->n_segs++];
    VkCommandBuffer cb = s->cb; /* segs[] keeps buffers across recordings */
    *s = (segment){host, w->pos, 0, cb, 0};
    return s;
}

/* Opens a command buffer: host writes (inputs, a host segment's results)
 * become visible to the device first. */
static st_status seg_open(walk *w)
{
    vk_exec *e = w->e;
    segment *s = seg_new(w, false);
    if (!s->cb) {
        VkCommandBufferAllocateInfo ai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, NULL, w->st->pool,
                                          VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
        ST_TRY(st_vk_check(vkAllocateCommandBuffers(e->dev->dev, &ai, &s->cb), "vkAllocateCommandBuffers"));
    }
    VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, NULL, 0, NULL};
    ST_TRY(st_vk_check(vkBeginCommandBuffer(s->cb, &bi), "vkBeginCommandBuffer"));
    w->rec = (st_vk_rec){e->dev, w->st, s->cb, {0}, VK_NULL_HANDLE};
    w->rec.tr.dag = w->st->dag;
    w->rec.tr.anc = w->st->anc;
    w->rec.tr.words = w->st->words;
    w->rec.tr.whole = e->whole;
    VkMemoryBarrier2 in = {VK_STRUCTURE_TYPE_MEMORY_BARRIER_2, NULL, VK_PIPELINE_STAGE_2_HOST_BIT, VK_ACCESS_2_HOST_WRITE_BIT,
                           STAGES, VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_TRANSFER_READ_BIT};
    VkDependencyInfo di = {VK_STRUCTURE_TYPE_DEPENDENCY_INFO, NULL, 0, 1, &in, 0, NULL, 0, NULL};
    vkCmdPipelineBarrier2(s->cb, &di);
    w->open = s;
    return ST_OK;
}

/* The driver's enqueue callback: records command c into the open command
 * buffer (opening one after a host segment or at the start). */
static st_status walk_enqueue(void *ctx, int c)
{
    walk *w = ctx;
    dag_state *st = w->st;
    const st_cmd *cmd = &st->dag->cmds[c];
    if (!w->open) ST_TRY(seg_open(w));
    st->order[w->pos++] = c;
    w->open->n++;
    st->seg_of[c] = (int)(w->open - st->segs);
    int nops = cmd->n_in + cmd->n_out;
    st_operand ops_buf[32];
    st_operand *ops = nops <= 32 ? ops_buf : malloc((size_t)nops * sizeof *ops);
    if (!ops) return st_error(ST_ERR_NOMEM, "out of memory");
    /* operands carry shapes only; data marks a present operand */
    for (int k = 0; k < nops; k++) {
        ops[k] = st_operand_of(&cmd->views[k], NULL);
        if (cmd->views[k].storage) ops[k].data = cmd->views[k].storage->dev ? cmd->views[k].storage->dev : cmd->views[k].storage;
    }
    st_vk_ctx vc = {w->e->dev, &w->rec, c};
    st_kctx k = {cmd->gnode, cmd->state, cmd->n_in, cmd->n_out, ops, ops + cmd->n_in, cmd->skip, NULL, cmd->views, &vc,
                 cmd->priv};
    if (w->timed) {
        vkCmdResetQueryPool(w->open->cb, st->qpool, 2 * (uint32_t)c, 2);
        vkCmdWriteTimestamp2(w->open->cb, VK_PIPELINE_STAGE_2_TOP_OF_PIPE_BIT, st->qpool, 2 * (uint32_t)c);
    }
    st_status r = st_drive_kernel_status((cmd->run ? cmd->run : st_vk_transfer)(&k));
    if (w->timed) vkCmdWriteTimestamp2(w->open->cb, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, st->qpool, 2 * (uint32_t)c + 1);
    if (ops != ops_buf) free(ops);
    return r;
}

/* The driver's host callback: a host command is a segment of its own. */
static st_status walk_host(void *ctx, int c)
{
    walk *w = ctx;
    ST_TRY(seg_close(w));
    segment *s = seg_new(w, true);
    w->st->order[w->pos++] = c;
    s->n = 1;
    w->st->seg_of[c] = (int)(s - w->st->segs);
    return ST_OK;
}

static const st_drive_ops vk_drive_ops = {walk_enqueue, walk_host};

/* Records the DAG in the driver's start order into segments. */
static st_status record_all(vk_exec *e, dag_state *st)
{
    walk w = {e, st, {0}, NULL, 0, e->base.prof != NULL && e->dev->ts_bits > 0};
    if (w.timed && !st->qpool) {
        VkQueryPoolCreateInfo qi = {VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, NULL, 0, VK_QUERY_TYPE_TIMESTAMP,
                                    2 * (uint32_t)st->dag->n_cmds + 1, 0};
        ST_TRY(st_vk_check(vkCreateQueryPool(e->dev->dev, &qi, NULL, &st->qpool), "vkCreateQueryPool (profiling)"));
    }
    st->timed = w.timed;
    st->n_segs = 0;
    st->recorded = false;
    /* parameter blocks are written again from the start */
    for (int i = 0; i < st->n_chunks; i++) st->chunks[i].used = 0;
    st_status r = st_drive_walk(&e->drive, 0, st->dag->n_cmds, false, &vk_drive_ops, &w, NULL);
    st_status r2 = seg_close(&w);
    if (r == ST_OK && r2 != ST_OK) st_drive_fail(&e->drive, r2, NULL);
    if (r != ST_OK || r2 != ST_OK) return st_drive_status(&e->drive);
    st->recorded = true;
    return ST_OK;
}

static st_status wait_value(vk_exec *e, uint64_t v)
{
    if (!v) return ST_OK;
    VkSemaphoreWaitInfo wi = {VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, NULL, 0, 1, &e->timeline, &v};
    return st_vk_check(vkWaitSemaphores(e->dev->dev, &wi, UINT64_MAX), "vkWaitSemaphores");
}

static st_status exec_submit(st_exec *base, const st_dag *d)
{
    vk_exec *e = (vk_exec *)base;
    dag_state *st = NULL;
    ST_TRY(state_get(e, d, &st));
    e->valid_before = st_vk_validation_errors();
    /* the DAG's command buffers may still run from its last run */
    ST_TRY(wait_value(e, st->last));
    ST_TRY(st_drive_start(&e->drive, d, base->ctl));
    bool untimed = base->prof && !st->timed && e->dev->ts_bits > 0;
    if (!st->recorded || e->drive.sched.random || untimed) ST_TRY(record_all(e, st));
    e->cur = st;
    for (int i = 0; i < st->n_segs; i++) {
        segment *s = &st->segs[i];
        const st_cmd *first = &d->cmds[st->order[s->first]];
        st_status r = st_run_check(&e->drive.run, first->gnode->name, first->op->name);
        uint64_t prev = e->value, v = ++e->value;
        s->value = v;
        st->last = v;
        if (r == ST_OK && !s->host) {
            VkSemaphoreSubmitInfo wsi = {VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO, NULL, e->timeline, prev,
                                         VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, 0};
            VkSemaphoreSubmitInfo ssi = {VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO, NULL, e->timeline, v,
                                         VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, 0};
            VkCommandBufferSubmitInfo cbi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO, NULL, s->cb, 0};
            VkSubmitInfo2 si = {VK_STRUCTURE_TYPE_SUBMIT_INFO_2, NULL, 0, prev ? 1u : 0u, &wsi, 1, &cbi, 1, &ssi};
            pthread_mutex_lock(&e->dev->queue_lock);
            r = st_vk_check(vkQueueSubmit2(e->dev->queue, 1, &si, VK_NULL_HANDLE), "vkQueueSubmit2");
            pthread_mutex_unlock(&e->dev->queue_lock);
            if (r == ST_OK) continue;
        } else if (r == ST_OK) {
            /* a host command: after the segment before it, on this thread */
            r = wait_value(e, prev);
            if (r == ST_OK && !e->host) r = st_host_create(&(st_session_options){.threads = e->threads}, &e->host);
            if (r == ST_OK) r = st_drive_host(e->host, &e->drive.run, base->prof, d, st->order[s->first]);
        }
        /* signalled even on failure, so waits for later values return */
        VkSemaphoreSignalInfo sig = {VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, NULL, e->timeline, v};
        if (r != ST_OK) {
            st_drive_fail(&e->drive, r, NULL);
            wait_value(e, prev); /* a host signal must not overtake a pending device one */
            for (int j = i + 1; j < st->n_segs; j++) st->segs[j].value = v;
            vkSignalSemaphore(e->dev->dev, &sig);
            return st_drive_status(&e->drive);
        }
        vkSignalSemaphore(e->dev->dev, &sig);
    }
    return ST_OK;
}

static st_status run_result(vk_exec *e)
{
    ST_TRY(st_drive_status(&e->drive));
    long now = st_vk_validation_errors();
    if (now != e->valid_before)
        return st_error(ST_ERR_BACKEND, "vulkan: the validation layer reported %ld message(s) during the run (above)",
                        now - e->valid_before);
    return ST_OK;
}

static st_status exec_wait(st_exec *base, const int *cmds, int n)
{
    vk_exec *e = (vk_exec *)base;
    dag_state *st = e->cur;
    if (!st) return ST_OK;
    uint64_t v = 0;
    if (n < 0) {
        v = st->last;
    } else {
        for (int i = 0; i < n; i++) {
            uint64_t x = st->segs[st->seg_of[cmds[i]]].value;
            if (x > v) v = x;
        }
    }
    ST_TRY(wait_value(e, v));
    return run_result(e);
}

/* ---- profiling ---- */

/* host clock - device clock (ns), from a timestamp written on the idle
 * queue between two host clock reads: the tightest of a few tries;
 * *err is half its width (runtime/profile.h). */
static st_status clock_offset(vk_exec *e, dag_state *st, int64_t *offset, int64_t *err)
{
    VkCommandBuffer cb;
    VkCommandBufferAllocateInfo ai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, NULL, st->pool,
                                      VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
    ST_TRY(st_vk_check(vkAllocateCommandBuffers(e->dev->dev, &ai, &cb), "vkAllocateCommandBuffers (profiling)"));
    uint32_t q = 2 * (uint32_t)st->dag->n_cmds;
    VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, NULL, 0, NULL};
    st_status r = st_vk_check(vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer (profiling)");
    if (r == ST_OK) {
        vkCmdResetQueryPool(cb, st->qpool, q, 1);
        vkCmdWriteTimestamp2(cb, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, st->qpool, q);
        r = st_vk_check(vkEndCommandBuffer(cb), "vkEndCommandBuffer (profiling)");
    }
    int64_t best_lo = 0, best_hi = -1;
    for (int k = 0; r == ST_OK && k < 4 && (best_hi < best_lo || best_hi - best_lo > 20000); k++) {
        VkCommandBufferSubmitInfo cbi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO, NULL, cb, 0};
        VkSubmitInfo2 si = {VK_STRUCTURE_TYPE_SUBMIT_INFO_2, NULL, 0, 0, NULL, 1, &cbi, 0, NULL};
        pthread_mutex_lock(&e->dev->queue_lock);
        int64_t h0 = st_prof_now();
        r = st_vk_check(vkQueueSubmit2(e->dev->queue, 1, &si, VK_NULL_HANDLE), "vkQueueSubmit2 (profiling)");
        if (r == ST_OK) r = st_vk_check(vkQueueWaitIdle(e->dev->queue), "vkQueueWaitIdle (profiling)");
        int64_t h1 = st_prof_now();
        pthread_mutex_unlock(&e->dev->queue_lock);
        uint64_t t = 0;
        if (r == ST_OK)
            r = st_vk_check(vkGetQueryPoolResults(e->dev->dev, st->qpool, q, 1, sizeof t, &t, sizeof t,
                                                  VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                            "vkGetQueryPoolResults (profiling)");
        if (r != ST_OK) break;
        int64_t d = (int64_t)((double)t * e->dev->ts_period);
        int64_t lo = h0 - d, hi = h1 - d;
        if (best_hi < best_lo || hi - lo < best_hi - best_lo) {
            best_lo = lo;
            best_hi = hi;
        }
    }
    vkFreeCommandBuffers(e->dev->dev, st->pool, 1, &cb);
    ST_TRY(r);
    *offset = best_lo + (best_hi - best_lo) / 2;
    *err = (best_hi - best_lo) / 2 + 1;
    return ST_OK;
}

/* The device times of d's last run (complete) into run, on the host
 * clock, in recording order. */
static st_status exec_collect(st_exec *base, const st_dag *d, st_prof_run *run)
{
    vk_exec *e = (vk_exec *)base;
    dag_state *st = NULL;
    for (int i = 0; i < e->n_states; i++)
        if (e->states[i].dag == d) st = &e->states[i];
    if (!st || !st->timed || !st->recorded || d->n_cmds == 0) return ST_OK;
    int64_t offset = 0;
    ST_TRY(clock_offset(e, st, &offset, &run->sync_error_ns));
    uint64_t mask = e->dev->ts_bits >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << e->dev->ts_bits) - 1);
    /* command by command: only queries a recorded command buffer reset
     * and wrote are read (a host command's never were) */
    for (int i = 0; i < st->n_segs; i++) {
        const segment *sg = &st->segs[i];
        for (int j = 0; !sg->host && j < sg->n; j++) {
            int c = st->order[sg->first + j];
            uint64_t q[4]; /* start, its availability, end, its availability */
            VkResult vr = vkGetQueryPoolResults(e->dev->dev, st->qpool, 2 * (uint32_t)c, 2, sizeof q, q, 2 * sizeof *q,
                                                VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
            if (vr != VK_SUCCESS && vr != VK_NOT_READY) return st_vk_check(vr, "vkGetQueryPoolResults (profiling)");
            if (!q[1] || !q[3]) continue; /* not reached: the run stopped before it */
            int64_t t0 = (int64_t)((double)(q[0] & mask) * e->dev->ts_period) + offset;
            int64_t t1 = (int64_t)((double)(q[2] & mask) * e->dev->ts_period) + offset;
            if (t1 <= t0) t1 = t0 + 1;
            /* overlapping slices of one lane are drawn on sub-lanes by the writer */
            st_prof_mark(run, c, t0, t1, ST_PROF_LANE(d->cmds[c].run ? ST_LANE_QUEUE : ST_LANE_TRANSFER, 0));
        }
    }
    return ST_OK;
}

static void exec_forget(st_exec *base, const st_dag *d)
{
    vk_exec *e = (vk_exec *)base;
    for (int i = 0; i < e->n_states; i++)
        if (e->states[i].dag == d) {
            wait_value(e, e->states[i].last);
            if (e->cur == &e->states[i]) e->cur = NULL;
            state_free(e, &e->states[i]);
            if (i != e->n_states - 1) {
                e->states[i] = e->states[e->n_states - 1];
                if (e->cur == &e->states[e->n_states - 1]) e->cur = &e->states[i];
            }
            e->n_states--;
            memset(&e->states[e->n_states], 0, sizeof e->states[0]);
            return;
        }
}

static int exec_pending(st_exec *base)
{
    vk_exec *e = (vk_exec *)base;
    if (!e->cur) return 0;
    uint64_t now = 0;
    vkGetSemaphoreCounterValue(e->dev->dev, e->timeline, &now);
    int n = 0;
    for (int i = 0; i < e->cur->n_segs; i++)
        if (e->cur->segs[i].value > now) n += e->cur->segs[i].n;
    return n;
}

static void exec_destroy(st_exec *base)
{
    vk_exec *e = (vk_exec *)base;
    if (e->timeline) wait_value(e, e->value);
    for (int i = 0; i < e->n_states; i++) state_free(e, &e->states[i]);
    free(e->states);
    st_drive_free(&e->drive);
    st_host_destroy(e->host);
    if (e->timeline) vkDestroySemaphore(e->dev->dev, e->timeline, NULL);
    st_vk_cache_save(e->dev);
    free(e);
}

static const st_exec_vt vk_exec_vt = {exec_submit, exec_wait, exec_destroy, exec_forget, exec_pending, exec_collect, NULL};

st_status st_vk_exec_create(st_backend *b, const st_session_options *o, st_exec **out)
{
    st_vk_device *d = (st_vk_device *)b;
    vk_exec *e = calloc(1, sizeof *e);
    if (!e) return st_error(ST_ERR_NOMEM, "out of memory creating the Vulkan executor");
    e->base.vt = &vk_exec_vt;
    e->base.backend = b;
    e->dev = d;
    e->threads = o->threads;
    e->whole = o->hazard_mode == ST_HAZARD_STORAGE;
    st_drive_init(&e->drive, o);
    const char *stats = getenv("STRATA_VULKAN_STATS");
    e->stats = stats ? atoi(stats) : 0;
    VkSemaphoreTypeCreateInfo ti = {VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO, NULL, VK_SEMAPHORE_TYPE_TIMELINE, 0};
    VkSemaphoreCreateInfo si = {VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &ti, 0};
    st_status r = st_vk_check(vkCreateSemaphore(d->dev, &si, NULL, &e->timeline), "vkCreateSemaphore (timeline)");
    if (r != ST_OK) {
        free(e);
        return r;
    }
    *out = &e->base;
    return ST_OK;
}
