"""The peers' soak programs (scripts/soak-recovery): the RabbitMQ Java client with its automatic recovery
(tests/java/RmqSoak.java, compiled with tests/java's programs) and aio-pika's connect_robust
(tests/faults/peer_aiopika.py)."""

from __future__ import annotations

from javatarget import CLIENT_JAR, Build, jar, tool


def java_peer_command(build: Build) -> tuple[list[str], dict[str, str] | None]:
    cp = build.classpath(jar(CLIENT_JAR, "librabbitmq-client-java"), jar("slf4j-api.jar", "libslf4j-java"),
                         jar("slf4j-nop.jar", "libslf4j-java"))
    return [tool("java", "openjdk-17-jdk-headless"), "-cp", cp, "RmqSoak"], None
