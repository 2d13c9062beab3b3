import { createTransport, type Transporter } from 'nodemailer';

/** One invitation e-mail. `acceptUrl` holds the secret: it goes into the message and nowhere else. */
export interface InvitationMail {
  invitationId: string;
  to: string;
  organizationName: string;
  inviter: string;
  role: string;
  acceptUrl: string;
  expiresAt: string;
}

/** Delays before each retry of a failed send (ms): four attempts over about six minutes. */
const RETRY_DELAYS_MS = [5_000, 60_000, 300_000];

/**
 * Sends invitation e-mails over SMTP (`VEXIL_SMTP_URL`) with nodemailer, off the request path:
 * {@link send} returns at once, and a failed send is retried, then logged (without the link).
 * Pending retries live in memory: a restart drops them, and the inviter still holds the link
 * (design record 022).
 */
export class InvitationMailer {
  private readonly transport: Transporter;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly sending = new Set<Promise<void>>();

  constructor(
    smtpUrl: string,
    private readonly from: string,
    /** Told of each failed attempt (`willRetry` false after the last); never given the link. */
    private readonly onFailure: (
      failure: { invitationId: string; attempt: number; willRetry: boolean },
      error: unknown,
    ) => void,
    private readonly retryDelaysMs: readonly number[] = RETRY_DELAYS_MS,
  ) {
    this.transport = createTransport(smtpUrl);
  }

  /** Queues `mail`; never throws. */
  send(mail: InvitationMail, attempt = 0): void {
    const sending = this.attempt(mail, attempt).finally(() => this.sending.delete(sending));
    this.sending.add(sending);
  }

  private async attempt(mail: InvitationMail, attempt: number): Promise<void> {
    try {
      await this.transport.sendMail({
        from: this.from,
        to: mail.to,
        subject: `You are invited to ${mail.organizationName} on Vexil`,
        text: [
          `${mail.inviter} invited you to the organization ${mail.organizationName} on Vexil, as ${mail.role}.`,
          '',
          `Accept the invitation: ${mail.acceptUrl}`,
          '',
          `The link works once and expires at ${mail.expiresAt}.`,
        ].join('\n'),
      });
    } catch (error) {
      const delay = this.retryDelaysMs[attempt];
      const failure = { invitationId: mail.invitationId, attempt: attempt + 1 };
      this.onFailure({ ...failure, willRetry: delay !== undefined }, error);
      if (delay === undefined) return;
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        this.send(mail, attempt + 1);
      }, delay);
      timer.unref();
      this.timers.add(timer);
    }
  }

  /** Drops pending retries, waits for sends in flight and closes the SMTP connections. */
  async close(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await Promise.all(this.sending);
    this.transport.close();
  }
}
