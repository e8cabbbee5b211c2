"""Scrapy's side of the broad-crawl comparison (benches/broad/run.sh).

A broad crawl as Scrapy's "Broad Crawls" guide sets one up: start URLs from a file,
every link followed across hosts, one item per page, robots.txt obeyed, and the
settings the guide recommends. Host names (hNNNNN.fixture.test) are answered from the
fixture's hosts file by HostsResolver, trawl's DNS_RESOLVE counterpart, through
Scrapy's TWISTED_DNS_RESOLVER setting (a process setting: the command line's, not the
spider's); Scrapy does not verify certificates, so HTTPS needs nothing more.

    scrapy runspider broad_spider.py -a urls=URLS_FILE -s BROAD_HOSTS_FILE=HOSTS \
        -s TWISTED_DNS_RESOLVER=broad_spider.HostsResolver \
        -s REACTOR_THREADPOOL_MAXSIZE=20 -O out.jl
"""

import scrapy
from scrapy.linkextractors import LinkExtractor
from twisted.internet import defer
from twisted.internet.interfaces import IResolverSimple
from zope.interface import implementer


@implementer(IResolverSimple)
class HostsResolver:
    """Names from a hosts file (ADDRESS NAME per line)."""

    def __init__(self, reactor, path):
        self.reactor = reactor
        self.hosts = {}
        with open(path) as f:
            for line in f:
                fields = line.split("#")[0].split()
                for name in fields[1:]:
                    self.hosts[name.lower()] = fields[0]

    @classmethod
    def from_crawler(cls, crawler, reactor):
        return cls(reactor, crawler.settings.get("BROAD_HOSTS_FILE"))

    def install_on_reactor(self):
        self.reactor.installResolver(self)

    def getHostByName(self, name, timeout=None):
        addr = self.hosts.get(name.lower())
        if addr is None:
            return defer.fail(OSError(f"unknown host {name}"))
        return defer.succeed(addr)


class BroadSpider(scrapy.Spider):
    name = "broad"
    custom_settings = {
        # Scrapy's "Broad Crawls" guide.
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
        "CONCURRENT_REQUESTS": 100,
        "LOG_LEVEL": "INFO",
        "COOKIES_ENABLED": False,
        "RETRY_ENABLED": False,
        "DOWNLOAD_TIMEOUT": 15,
        "REDIRECT_ENABLED": False,
        "DEPTH_PRIORITY": 1,
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "ROBOTSTXT_OBEY": True,
        "TELNETCONSOLE_ENABLED": False,
    }

    def __init__(self, urls=None, **kwargs):
        super().__init__(**kwargs)
        with open(urls) as f:
            self.start_urls = [u.strip() for u in f if u.strip()]
        self.links = LinkExtractor()

    def parse(self, response):
        yield {"url": response.url, "title": response.css("title::text").get()}
        for link in self.links.extract_links(response):
            yield response.follow(link.url, self.parse)
