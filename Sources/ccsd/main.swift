import Daemon
