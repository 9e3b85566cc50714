package io.xaforward.gateway.registry;

import io.xaforward.dataplane.SharedLayouts;
import io.xaforward.protocol.RankRegistration;

import io.xaforward.gateway.GatewayConfig;
import io.xaforward.gateway.GatewayConfigParser;
import io.xaforward.gateway.GatewayConfigParser.ConfigException;
import io.xaforward.protocol.NetworkForm;
import io.xaforward.protocol.XafHeader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Routes that follow the jobs' rank registrations ({@code xaf gateway --registry URL --follow-jobs /xaf/jobs/}):
 * every registration {@code /xaf/jobs/JOB/ranks/RANK} ({@link RankRegistration}) whose data center is the
 * {@code datacenter} of one of the gateway's ports becomes the route of identifier {@code JOB << 16 | RANK} out of that
 * port, to the MAC and address the rank registered, admitted from the other ports, filtered by the job token it
 * registered. The source address is the gateway port's own: the registration's gateway next hop must be an address
 * (IP forms) or the MAC (id form) of that port. The job's UDP flows per rank ({@code flows} in the registration,
 * {@code xaf worker --flows N}, the same on every rank) become the route's {@code src-port-span}, so that the rank,
 * receiving behind the gateway, still tells each sender's flows apart, as with the identifier plan's routes. So
 * everything a route holds comes from the registration, and a rank restarted on another host takes its route along. Other keys under the prefix (the job's settings) and registrations
 * of data centers no port faces are passed over; a registration that contradicts its port is an error, named and
 * counted by {@link RouteRegistryWatch}. A route leaves when its registration does (the worker ends or its lease
 * expires), so an empty route set is nothing to refuse here.
 *
 * <p><b>Quotas.</b> One job cannot take the route map from the others: a job gets routes only for ranks below its
 * quota, the smaller of its world size (the smallest {@code world} its registrations carry) and the gateway's
 * {@code --max-ranks-per-job} cap ({@link #DEFAULT_MAX_RANKS_PER_JOB} unless given). Registrations at or above the
 * quota get no route; they are dropped for that job only, counted ({@code xaf_registry_quota_dropped_total}, and the
 * gauges of what is dropped now) and logged once per job when the job goes over its quota. Without this, one job that
 * writes 65,536 valid registrations would make the wanted set larger than the route map, every later update would be
 * refused whole, and no other job would get a route. Registrations at or above the cap are passed over before their
 * value is even parsed, so a flood costs the gateway little more than its keys.
 *
 * <p><b>A full route map.</b> Quotas bound each job, not the number of jobs. When the jobs' routes together still
 * exceed the route map, whole jobs are left out rather than the whole update refused: the jobs that had routes in
 * the last update keep them, and the others are admitted in job order while they fit. A job left out gets no route
 * at all (half a job's ranks are of no use to an all-reduce), is counted ({@code xaf_registry_jobs_refused}) and
 * logged once; it is admitted as soon as room frees up.
 */
public final class JobRoutes implements RouteRegistryWatch.Entries {
    /** Where the workers register (the rendezvous of {@code xaf worker --etcd}). */
    public static final String JOBS = "/xaf/jobs/";
    private static final String NUMBER = "(0|[1-9][0-9]{0,8})";
    private static final Pattern KEY = Pattern.compile(Pattern.quote(JOBS) + NUMBER + "/ranks/" + NUMBER);

    /** A port's own addresses, as the gateway's network namespace holds them. */
    public interface PortAddresses {
        List<InetAddress> ips(String iface);

        byte[] mac(String iface);
    }

    /**
     * The interfaces of the namespace the gateway runs in, each read at most once a second: every change under the
     * prefix derives every route again, and one interface lookup costs about 0.1 ms.
     */
    public static final PortAddresses SYSTEM = cached(new PortAddresses() {
        @Override
        public List<InetAddress> ips(String iface) {
            NetworkInterface ni = find(iface);
            return ni == null ? List.of() : ni.inetAddresses().toList();
        }

        @Override
        public byte[] mac(String iface) {
            NetworkInterface ni = find(iface);
            try {
                return ni == null ? null : ni.getHardwareAddress();
            } catch (SocketException e) {
                return null;
            }
        }

        private NetworkInterface find(String iface) {
            try {
                return NetworkInterface.getByName(iface);
            } catch (SocketException e) {
                return null;
            }
        }
    }, 1_000_000_000L);

    /** {@code read}, each interface's answer kept for {@code maxAgeNanos}. */
    static PortAddresses cached(PortAddresses read, long maxAgeNanos) {
        record Read(List<InetAddress> ips, byte[] mac, long at) {}
        Map<String, Read> reads = new ConcurrentHashMap<>();
        Function<String, Read> get = iface -> reads.compute(iface, (k, r) ->
                r != null && System.nanoTime() - r.at() < maxAgeNanos ? r : new Read(read.ips(k), read.mac(k), System.nanoTime()));
        return new PortAddresses() {
            @Override
            public List<InetAddress> ips(String iface) {
                return get.apply(iface).ips();
            }

            @Override
            public byte[] mac(String iface) {
                byte[] mac = get.apply(iface).mac();
                return mac == null ? null : mac.clone();
            }
        };
    }

    /**
     * The most ranks a job gets routes for unless the gateway is told otherwise: 64 jobs of this size fill the route
     * map (65,536 routes), and data-parallel jobs with more than 1024 workers behind one gateway are beyond this
     * project's reach. A job's own world size, when registered, bounds it further.
     */
    public static final int DEFAULT_MAX_RANKS_PER_JOB = 1024;
    private static final Logger LOG = LoggerFactory.getLogger(JobRoutes.class);

    private final PortAddresses addresses;
    private final int maxRanksPerJob;
    /** This pass (one {@link #route} per entry, then {@link #admit}): each job's smallest registered world size. */
    private Map<Integer, Integer> passWorlds = new HashMap<>();
    /** This pass: registrations passed over at the cap, by key, with their job. */
    private Map<String, Integer> passOverCap = new HashMap<>();
    /** The last pass's dropped registrations (key -> job), to count and log only what is new. */
    private Map<String, Integer> dropped = Map.of();
    private final AtomicLong droppedTotal = new AtomicLong();
    private volatile int droppedNow, jobsOverQuotaNow, jobsRefusedNow;
    /** How many routes the route map holds: the jobs' routes together never exceed it. */
    private final int routeCapacity;
    /** The jobs that had routes in the last pass (they keep them when the map is full), and those left out. */
    private Set<Integer> admittedJobs = Set.of(), refusedJobs = Set.of();

    public JobRoutes(PortAddresses addresses) {
        this(addresses, DEFAULT_MAX_RANKS_PER_JOB);
    }

    /** Routes for at most {@code maxRanksPerJob} ranks of each job (1..65536), fewer where a job's world is smaller. */
    public JobRoutes(PortAddresses addresses, int maxRanksPerJob) {
        this(addresses, maxRanksPerJob, SharedLayouts.MAX_ROUTES);
    }

    /** As above, for a route map of {@code routeCapacity} routes. */
    public JobRoutes(PortAddresses addresses, int maxRanksPerJob, int routeCapacity) {
        if (maxRanksPerJob < 1 || maxRanksPerJob > 0x10000) {
            throw new IllegalArgumentException("--max-ranks-per-job must be 1..65536, was " + maxRanksPerJob);
        }
        if (routeCapacity < 1) throw new IllegalArgumentException("route capacity must be positive, was " + routeCapacity);
        this.addresses = addresses;
        this.maxRanksPerJob = maxRanksPerJob;
        this.routeCapacity = routeCapacity;
    }

    /** Checks a {@code --follow-jobs} prefix: every job ({@code /xaf/jobs/}) or one ({@code /xaf/jobs/7/}). */
    public static String checkPrefix(String prefix) {
        String p = prefix.endsWith("/") ? prefix : prefix + "/";
        if (!p.equals(JOBS) && !p.matches(Pattern.quote(JOBS) + "[1-9][0-9]{0,4}/")) {
            throw new IllegalArgumentException("--follow-jobs must be " + JOBS + " (every job) or " + JOBS
                    + "JOB/ (one job), where the workers register; was " + prefix);
        }
        return p;
    }

    /** Derived routes appear and leave with registrations: an empty set is every job ended, not a mistake. */
    @Override
    public boolean emptyNeedsMarker() {
        return false;
    }

    /**
     * Read job by job: a job that writes more keys or bytes under its directory than one etcd answer may hold is
     * skipped alone, not the whole registry ({@link RouteRegistryWatch}).
     */
    @Override
    public boolean readByGroup() {
        return true;
    }

    /** Only directories under which a registration ({@code /xaf/jobs/JOB/ranks/RANK}) can lie: other names give no route. */
    @Override
    public boolean wantsGroup(String group) {
        Matcher m = KEY.matcher(group);
        return m.matches() || m.hitEnd();
    }

    @Override
    public Optional<GatewayConfig.RouteConfig> route(String key, String value, String source,
                                                     List<GatewayConfig.PortConfig> ports) {
        Matcher m = KEY.matcher(key);
        if (!m.matches()) return Optional.empty();
        long job = Long.parseLong(m.group(1)), rank = Long.parseLong(m.group(2));
        if (job < 1 || job > 0xFFFF) throw new ConfigException(source + ": job " + job + " is outside 1..65535");
        if (rank > 0xFFFF) throw new ConfigException(source + ": rank " + rank + " is outside 0..65535");
        if (rank >= maxRanksPerJob) { // over any quota this job can have: not worth parsing
            passOverCap.put(key, (int) job);
            return Optional.empty();
        }
        Map<String, Object> reg;
        try {
            reg = RankRegistration.read(value, source);
        } catch (IllegalArgumentException e) {
            throw new ConfigException(e.getMessage());
        }
        if (reg.get("world") instanceof Integer world) passWorlds.merge((int) job, world, Math::min);
        String dc = (String) reg.get("datacenter");
        GatewayConfig.PortConfig port = ports.stream().filter(p -> p.datacenter().equals(Optional.of(dc))).findFirst().orElse(null);
        if (port == null) return Optional.empty(); // a data center this gateway does not face
        String where = source + " (rank " + rank + " of job " + job + ", data center " + dc + ", port " + port.iface() + ")";
        NetworkForm form = NetworkForm.fromName((String) reg.get("form"));
        if (form != port.form()) {
            throw new ConfigException(where + ": registered form " + form.configName() + ", the port is "
                    + port.form().configName());
        }
        if (!(reg.get("token") instanceof Long token)) throw new ConfigException(where + ": no job token registered");
        if (!(reg.get("mac") instanceof String macText)) throw new ConfigException(where + ": no MAC registered");
        byte[] dstMac = mac(macText, where);
        @SuppressWarnings("unchecked")
        Map<String, Object> gateway = (Map<String, Object>) reg.getOrDefault("gateway", Map.of());
        Optional<byte[]> srcIp = Optional.empty(), dstIp = Optional.empty();
        if (form == NetworkForm.ID) {
            if (!(gateway.get("mac") instanceof String gw)) throw new ConfigException(where + ": no gateway MAC registered");
            byte[] own = addresses.mac(port.iface());
            if (own == null || !Arrays.equals(own, mac(gw, where))) {
                throw new ConfigException(where + ": registered gateway " + gw + ", which is not the port's MAC ("
                        + (own == null ? "none" : HexFormat.ofDelimiter(":").formatHex(own)) + ")");
            }
        } else {
            if (!(reg.get("ip") instanceof String ip)) throw new ConfigException(where + ": no ip registered");
            if (!(gateway.get("ip") instanceof String gw)) throw new ConfigException(where + ": no gateway ip registered");
            dstIp = Optional.of(ip(ip, form, where + ": ip").getAddress());
            InetAddress gwIp = ip(gw, form, where + ": gateway");
            List<InetAddress> own = addresses.ips(port.iface());
            if (own.stream().noneMatch(a -> Arrays.equals(a.getAddress(), gwIp.getAddress()))) {
                throw new ConfigException(where + ": registered gateway " + gw + ", which is not an address of the port ("
                        + String.join(", ", own.stream().map(InetAddress::getHostAddress).toList()) + ")");
            }
            srcIp = Optional.of(gwIp.getAddress());
        }
        List<String> ingress = ports.stream().map(GatewayConfig.PortConfig::iface).filter(i -> !i.equals(port.iface())).toList();
        // The id form has no UDP ports, so its flows are one (as the identifier plan writes it).
        int srcPortSpan = form == NetworkForm.ID ? 1 : (int) reg.getOrDefault("flows", 1);
        return Optional.of(new GatewayConfig.RouteConfig((int) (job << 16 | rank), (int) job, (int) (long) token,
                GatewayConfig.Action.FORWARD, Optional.of(port.iface()), Optional.of(form), ingress, Optional.empty(),
                Optional.of(dstMac), srcIp, dstIp, XafHeader.UDP_PORT, srcPortSpan, XafHeader.UDP_PORT, 0));
    }

    /** A job's quota this pass: its smallest registered world size, never more than the cap. */
    private int quota(int job, Map<Integer, Integer> worlds) {
        return Math.min(maxRanksPerJob, worlds.getOrDefault(job, maxRanksPerJob));
    }

    /**
     * Each job's routes below its quota (see the class comment); the rest are dropped, counted, and logged once per job
     * when it goes over its quota. Ends the pass that {@link #route} began.
     */
    @Override
    public Map<String, GatewayConfig.RouteConfig> admit(Map<String, GatewayConfig.RouteConfig> routes) {
        Map<Integer, Integer> worlds = passWorlds;
        Map<String, Integer> now = passOverCap;
        passWorlds = new HashMap<>();
        passOverCap = new HashMap<>();
        Map<String, GatewayConfig.RouteConfig> admitted = new LinkedHashMap<>();
        for (var e : routes.entrySet()) {
            GatewayConfig.RouteConfig r = e.getValue();
            int job = r.networkId() >>> 16, rank = r.networkId() & 0xFFFF;
            if (rank >= quota(job, worlds)) now.put(e.getKey(), job);
            else admitted.put(e.getKey(), r);
        }
        Map<Integer, Integer> perJob = new TreeMap<>();
        for (var e : now.entrySet()) {
            perJob.merge(e.getValue(), 1, Integer::sum);
            if (!dropped.containsKey(e.getKey())) droppedTotal.incrementAndGet();
        }
        Set<Integer> before = new HashSet<>(dropped.values());
        for (var e : perJob.entrySet()) {
            int job = e.getKey(), q = quota(job, worlds);
            if (before.contains(job)) continue;
            LOG.warn("job {}: registrations of ranks {} and above get no route ({} dropped now): the job's quota is {}"
                    + " ranks ({}); other jobs' routes are not affected", job, q, e.getValue(), q,
                    worlds.containsKey(job) && worlds.get(job) <= maxRanksPerJob ? "its registered world size"
                            : "the gateway's --max-ranks-per-job");
        }
        for (int job : before) {
            if (!perJob.containsKey(job)) LOG.info("job {}: back within its route quota", job);
        }
        dropped = now;
        droppedNow = now.size();
        jobsOverQuotaNow = perJob.size();
        return fitTheMap(admitted);
    }

    /** Whole jobs out while the routes exceed the map: the last pass's jobs first, then by job id (class comment). */
    private Map<String, GatewayConfig.RouteConfig> fitTheMap(Map<String, GatewayConfig.RouteConfig> routes) {
        Map<Integer, Integer> perJob = new TreeMap<>();
        for (GatewayConfig.RouteConfig r : routes.values()) perJob.merge(r.networkId() >>> 16, 1, Integer::sum);
        Set<Integer> refused = new TreeSet<>();
        if (routes.size() > routeCapacity) {
            List<Integer> order = new ArrayList<>();
            for (int job : perJob.keySet()) if (admittedJobs.contains(job)) order.add(job);
            for (int job : perJob.keySet()) if (!admittedJobs.contains(job)) order.add(job);
            int room = routeCapacity;
            for (int job : order) {
                int n = perJob.get(job);
                if (n <= room) room -= n; else refused.add(job);
            }
        }
        for (int job : refused) {
            if (!refusedJobs.contains(job)) {
                LOG.warn("job {}: its {} routes do not fit the route map ({} routes, held by other jobs): none installed"
                        + " until room frees up", job, perJob.get(job), routeCapacity);
            }
        }
        for (int job : refusedJobs) if (!refused.contains(job)) LOG.info("job {}: its routes fit the route map again", job);
        Map<String, GatewayConfig.RouteConfig> fits = new LinkedHashMap<>();
        for (var e : routes.entrySet()) if (!refused.contains(e.getValue().networkId() >>> 16)) fits.put(e.getKey(), e.getValue());
        Set<Integer> jobs = new HashSet<>(perJob.keySet());
        jobs.removeAll(refused);
        admittedJobs = jobs;
        refusedJobs = refused;
        jobsRefusedNow = refused.size();
        return fits;
    }

    @Override
    public String metrics() {
        return "# HELP xaf_registry_quota_dropped_total Rank registrations given no route because their rank is at or above"
                + " the job's quota (world size or --max-ranks-per-job); each counted once while it stays dropped.\n"
                + "# TYPE xaf_registry_quota_dropped_total counter\nxaf_registry_quota_dropped_total " + droppedTotal.get() + "\n"
                + "# HELP xaf_registry_quota_dropped Rank registrations given no route now, over their job's quota.\n"
                + "# TYPE xaf_registry_quota_dropped gauge\nxaf_registry_quota_dropped " + droppedNow + "\n"
                + "# HELP xaf_registry_jobs_over_quota Jobs with registrations over their quota now.\n"
                + "# TYPE xaf_registry_jobs_over_quota gauge\nxaf_registry_jobs_over_quota " + jobsOverQuotaNow + "\n"
                + "# HELP xaf_registry_jobs_refused Jobs given no route now because their routes do not fit the route map.\n"
                + "# TYPE xaf_registry_jobs_refused gauge\nxaf_registry_jobs_refused " + jobsRefusedNow + "\n";
    }

    private static byte[] mac(String text, String where) {
        try {
            return GatewayConfigParser.parseMac(text);
        } catch (IllegalArgumentException e) {
            throw new ConfigException(where + ": " + e.getMessage());
        }
    }

    private static InetAddress ip(String text, NetworkForm form, String where) {
        InetAddress a;
        try {
            a = InetAddress.ofLiteral(text);
        } catch (IllegalArgumentException e) {
            throw new ConfigException(where + ": '" + text + "' is not an IP address");
        }
        if ((a instanceof Inet4Address) != (form == NetworkForm.IPV4)) {
            throw new ConfigException(where + ": '" + text + "' is not an " + form.configName() + " address");
        }
        return a;
    }
}
