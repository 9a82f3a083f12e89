import Daemon
import CCSEmulator
