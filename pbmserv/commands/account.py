"""Account commands: signup, change password/address, signoff, vacation, reset."""

from __future__ import annotations

from pbmserv import i18n
from pbmserv.commands.args import small_number
from pbmserv.commands.base import Command, Context, Invocation, Result, login
from pbmserv.db.models import MailPrefs, User
from pbmserv.db.status import DigestMode
from pbmserv.i18n import LANGUAGES, N_
from pbmserv.notifications.accounts import (
    mail_address_code,
    mail_reset_code,
    mail_signup_code,
    tell_address_change_asked,
    tell_address_changed,
)
from pbmserv.notifications.subjects import our_subject
from pbmserv.reads import clocks
from pbmserv.render import render
from pbmserv.service import accounts, clock, confirmations, mail_prefs, resets
from pbmserv.service.accounts import (
    IMPORTED_DOMAIN,
    check_email,
    check_not_locked,
    check_userid,
    close_account,
    existing_user,
    has_no_address,
    open_account,
    set_password,
)
from pbmserv.service.errors import PlayerError
from pbmserv.service.throttle import code_key
from pbmserv.service.tournaments import TournamentService


class Signup(Command):
    name = "signup"
    arguments = "userid password [email]"
    summary = N_("open an account; mail goes to the sender's address unless another is given")
    secret_args = (1,)
    min_args = 2
    max_args = 3

    def run(self, ctx: Context, inv: Invocation) -> Result:
        email = inv.args[2] if len(inv.args) > 2 else ctx.sender
        ctx.passwords.add(inv.args[1])
        settings, now = ctx.settings, ctx.service.now
        check_userid(inv.args[0])
        confirmations.check_signup(ctx.session, ctx.sender, check_email(email), now,
                                   per_day=settings.signups_per_sender_day,
                                   hours=settings.confirm_hours)
        confirmations.claim(ctx.session, inv.args[0], now, settings.confirm_hours)
        user = open_account(ctx.session, inv.args[0], inv.args[1], email,
                            reserve_days=settings.userid_reserve_days, now=now)
        user.created_at = now
        if ctx.language:  # the signup mail's Content-Language speaks for the new player
            ctx.session.flush()  # (its id)
            mail_prefs.set_language(ctx.session, user, ctx.language)
        code = confirmations.start(user, ctx.sender)
        lapses = confirmations.lapses_at(user, settings.confirm_hours)
        subject = f"confirm {user.userid} {code}"
        here = user.email == ctx.sender.lower()
        if not here:  # the one mail to that address until it answers
            cause = ctx.mail_others([user.email])
            mail_signup_code(ctx.session, settings, to=user.email, userid=user.userid,
                             code=code, sender=ctx.sender.lower(), lapses=lapses,
                             inbound_id=ctx.inbound_id, cause=cause)
        else:  # the reply itself is the confirmation
            ctx.secret_reply = True
        returning = accounts.returning_account(ctx.session, user.userid, user.email)
        return Result(render("commands/signup.txt.j2", userid=user.userid, email=user.email,
                             code=code if here else None, lapses=lapses,
                             returning=returning),
                      subject=subject if here else our_subject(
                          settings, f"{user.userid} waits for its confirmation"))


class Confirm(Command):
    name = "confirm"
    arguments = "userid code"
    summary = N_("confirm a new account, or a new address, with the code mailed to that "
               "address (a reply to that mail does it: its Subject is this command)")
    secret_args = (1,)
    min_args = 2
    max_args = 2

    def run(self, ctx: Context, inv: Invocation) -> Result:
        ctx.passwords.add(inv.args[1])
        now, settings = ctx.service.now, ctx.settings
        user = existing_user(ctx.session, inv.args[0])
        key = code_key("confirm", user.userid, ctx.sender)
        check_not_locked(ctx.session, (key, key), now, what="confirmation codes")
        if user.confirmed_at is not None and user.new_email is not None:
            old = confirmations.confirm_address(ctx.session, user, inv.args[1], ctx.sender,
                                                now, settings.confirm_hours)
            if not old.endswith("@" + IMPORTED_DOMAIN):
                tell_address_changed(ctx.session, settings, old=old, userid=user.userid,
                                     new=user.email, requester=ctx.sender,
                                     inbound_id=ctx.inbound_id)
            return Result(render("commands/address_confirmed.txt.j2", userid=user.userid,
                                 email=user.email, old=old),
                          subject=our_subject(settings, f"{user.userid}'s address changed"))
        confirmations.confirm(user, inv.args[1], ctx.sender, now, settings.confirm_hours)
        returning = accounts.returning_account(ctx.session, user.userid, user.email)
        closed_at = returning.closed_at if returning is not None else None
        back = accounts.reopen(ctx.session, user, now)
        return Result(render("commands/confirmed.txt.j2", userid=user.userid,
                             email=user.email, back=back is not None, closed_at=closed_at),
                      subject=our_subject(settings, f"welcome{' back' if back else ''}, "
                                                    f"{user.userid}"))


class Change(Command):
    name = "change"
    arguments = "password userid old new | address userid password email"
    summary = N_("change your password, or the address your mail goes to (a new address "
               "takes effect once it answers the mail sent there; the old one is told)")
    min_args = 4
    max_args = 4

    def secrets(self, inv: Invocation) -> tuple[int, ...]:
        return (2,) if inv.args and inv.args[0].lower() == "address" else (2, 3)

    def run(self, ctx: Context, inv: Invocation) -> Result:
        what, userid, secret, new = inv.args
        user = login(ctx, userid, secret)
        if what.lower() == "password":
            ctx.passwords.add(new)
            set_password(ctx.session, user, new)
        elif what.lower() == "address":
            return self.ask_address(ctx, user, check_email(new))
        else:
            raise PlayerError(N_("you can change your password or address, not that"),
                              usage=True)
        return Result(render("commands/change.txt.j2", user=user, what=what.lower()),
                      subject=our_subject(ctx.settings,
                                          f"{user.userid}'s {what.lower()} changed"))

    def ask_address(self, ctx: Context, user: User, new: str) -> Result:
        """A new address takes effect once it answers: a code goes there (this reply
        is it, when it goes there), and the old address is told."""
        settings, now, sender = ctx.settings, ctx.service.now, ctx.sender.lower()
        code = confirmations.start_address(user, new, now)
        lapses = confirmations.address_lapses_at(user, settings.confirm_hours)
        subject = f"confirm {user.userid} {code}"
        here = new == sender
        if here:  # the reply itself is the confirmation
            ctx.secret_reply = True
        else:  # an address the account has not proved yet: counted as another's
            cause = ctx.mail_others([new])
            mail_address_code(ctx.session, settings, to=new, userid=user.userid, code=code,
                              sender=sender, lapses=lapses, inbound_id=ctx.inbound_id,
                              cause=cause)
        told = sender != user.email and not has_no_address(user)
        if told:
            tell_address_change_asked(ctx.session, settings, to=user.email,
                                      userid=user.userid, new=new, requester=sender,
                                      lapses=lapses, inbound_id=ctx.inbound_id)
        return Result(render("commands/change.txt.j2", user=user, what="address", new=new,
                             code=code if here else None, told=told, lapses=lapses),
                      subject=subject if here else our_subject(
                          settings, f"{user.userid}'s new address waits for its confirmation"))


class Signoff(Command):
    name = "signoff"
    arguments = "userid password"
    summary = N_("close your account (finished games keep their records); you leave your "
               "tournaments, losing their games still in play")
    secret_args = (1,)
    min_args = 2
    max_args = 2

    def run(self, ctx: Context, inv: Invocation) -> Result:
        user = login(ctx, inv.args[0], inv.args[1])
        TournamentService(ctx.service).leave_all(user)  # kept only if the account closes
        close_account(ctx.session, user, ctx.service.now)
        return Result(render("commands/signoff.txt.j2", user=user),
                      subject=our_subject(ctx.settings, f"{user.userid} signed off"))


class VacationCommand(Command):
    name = "vacation"
    arguments = "userid password [DAYS|off]"
    summary = (f"stop all your clocks for DAYS days (up to {clock.VACATION_DAYS_PER_YEAR} a "
               "year); 'off' ends a vacation early; with neither, how it stands")
    secret_args = (1,)
    min_args = 2
    max_args = 3

    def run(self, ctx: Context, inv: Invocation) -> Result:
        user = login(ctx, inv.args[0], inv.args[1])
        service = ctx.service
        if len(inv.args) == 3:
            word = inv.args[2].lower()
            days = None if word == "off" else small_number(word)
            if word != "off" and (days is None or days > clock.MAX_CLOCK_DAYS):
                raise PlayerError(N_("give the number of days, or 'off'"), usage=True)
            service.vacation(user, days)
        current = clocks.current_vacation(ctx.session, user.id, service.now)
        taken = clocks.days_taken(ctx.session, user.id, service.now)
        return Result(
            render("commands/vacation.txt.j2", user=user, current=current,
                   left=max(clock.VACATION_DAYS_PER_YEAR - round(taken), 0),
                   allowance=clock.VACATION_DAYS_PER_YEAR),
            subject=our_subject(ctx.settings, f"{user.userid}'s vacation"),
        )


class MailPreferences(Command):
    name = "notify"
    arguments = ("userid password [html on|off | words on|off | language en|de|fr|ja "
                 "| digest daily|twice|off [HOUR]]")
    summary = N_("how your mail comes: 'html off' for plain text only; 'words on' adds the "
               "board in words, for a screen reader; 'language de' has the server write "
               "to you in German (en English, de German, fr French, ja Japanese: "
               "commands stay as they are); 'digest daily' (or "
               "'twice') for one mail a day (or two) listing the boards that wait for your "
               "move, instead of a mail per move, at HOUR o'clock UTC (default 18); with "
               "nothing after the password, how it stands")
    secret_args = (1,)
    min_args = 2
    max_args = 5

    def run(self, ctx: Context, inv: Invocation) -> Result:
        user = login(ctx, inv.args[0], inv.args[1])
        words = [w.lower() for w in inv.args[2:]]
        now = ctx.service.now
        chosen = ctx.session.get(MailPrefs, user.id)
        if words[:1] == ["html"] and words[1:] in (["on"], ["off"]):
            chosen = mail_prefs.set_html(ctx.session, user, words[1] == "on")
        elif words[:1] == ["words"] and words[1:] in (["on"], ["off"]):
            chosen = mail_prefs.set_words(ctx.session, user, words[1] == "on")
        elif words[:1] == ["language"]:
            if len(words) != 2 or words[1] not in LANGUAGES:
                raise PlayerError("the languages are " + ", ".join(
                    f"{code} ({name})" for code, name in LANGUAGES.items())
                    + ": write 'language' and one of them, as 'language de'", usage=True)
            chosen = mail_prefs.set_language(ctx.session, user, words[1])
            i18n.switch(words[1])  # this reply says it in the language chosen
        elif words[:1] == ["digest"] and len(words) in (2, 3) \
                and words[1] in {m.value for m in DigestMode}:
            hour = None
            if len(words) == 3:
                hour = small_number(words[2])
                if hour is None:
                    raise PlayerError(N_("the digest hour is a whole hour from 0 to 23 (UTC)"))
            chosen = mail_prefs.set_digest(ctx.session, user, DigestMode(words[1]), hour, now)
        elif words:
            raise PlayerError(N_("write 'html on', 'html off', 'words on', 'words off', "
                              "'language de' (or en, fr, ja), 'digest daily', 'digest twice' "
                              "or 'digest off' (a digest may end with its hour, 0 to 23)"),
                              usage=True)
        return Result(render("commands/mail_prefs.txt.j2", user=user,
                             html=chosen.html if chosen else True,
                             words=chosen.words if chosen else False,
                             language=(chosen.language if chosen else None) or "en",
                             languages=LANGUAGES,
                             digest=chosen.digest if chosen else DigestMode.OFF,
                             hour=chosen.digest_hour if chosen else mail_prefs.DEFAULT_HOUR,
                             next_at=chosen.digest_next_at if chosen else None),
                      subject=our_subject(ctx.settings, f"{user.userid}'s mail"))


class Reset(Command):
    name = "reset"
    arguments = "userid [code newpassword]"
    summary = N_("forgot your password? 'reset userid' mails a one-time code to the "
               "account's own address; then 'reset userid code newpassword' sets the "
               "new password")
    secret_args = (1, 2)
    min_args = 1
    max_args = 3

    def run(self, ctx: Context, inv: Invocation) -> Result:
        if len(inv.args) == 2:
            raise PlayerError(N_("give the code and the new password, or neither"), usage=True)
        user = existing_user(ctx.session, inv.args[0])
        now = ctx.service.now
        subject = our_subject(ctx.settings, f"{user.userid}'s password")
        if len(inv.args) == 3:
            ctx.passwords.update(inv.args[1:])
            resets.redeem(ctx.session, user, inv.args[1], inv.args[2], ctx.sender, now)
            return Result(render("commands/reset.txt.j2", userid=user.userid, done=True),
                          subject=subject + " changed")
        code, row = resets.issue(ctx.session, user, now)
        sent = code is not None
        if code is not None:
            # refused here, the code is not kept (the command's savepoint)
            cause = ctx.mail_others([user.email])
            mail_reset_code(ctx.session, ctx.settings, to=user.email, userid=user.userid,
                            code=code, expires=row.expires_at, requester=ctx.sender,
                            inbound_id=ctx.inbound_id, cause=cause)
        return Result(render("commands/reset.txt.j2", userid=user.userid, done=False,
                             sent=sent, hours=int(resets.VALID_FOR.total_seconds() // 3600),
                             requested=row.requested_at,
                             minutes=int(resets.REQUEST_EVERY.total_seconds() // 60),
                             again=row.requested_at + resets.REQUEST_EVERY),
                      subject=our_subject(ctx.settings, f"reset code for {user.userid}"))
