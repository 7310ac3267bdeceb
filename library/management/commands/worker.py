from django.core.management import call_command

from library.cli import Verb


class Command(Verb):
    help = "Start the background worker (Huey): scheduled connector runs, maintenance, browser-started jobs."
    json_output = False
    system_checks = "all"

    def handle(self, *args, **opts):
        call_command("run_huey")
