"""The long-running process: wiring, file watching, the schedule, the control socket, the service.

This is the only package that imports watchdog and apscheduler.
"""
