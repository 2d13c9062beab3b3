import { createTransport, type Transporter } from 'nodemailer';

/**
 * One e-mail. Its text may hold a secret link (an invitation, a password reset): it goes into the
 * message and nowhere else; `about` names it in logs instead (e.g. `invitation <id>`).
 */
export interface Mail {
  about: string;
  to: string;
  subject: string;
  text: string;
}

/** Delays before each retry of a failed send (ms): four attempts over about six minutes. */
const RETRY_DELAYS_MS = [5_000, 60_000, 300_000];

/**
 * Sends e-mails (invitations, password resets) over SMTP (`VEXIL_SMTP_URL`) with nodemailer, off
 * the request path: {@link send} returns at once, and a failed send is retried, then logged
 * (without the text). Pending retries live in memory: a restart drops them (design records 022
 * and 034).
 */
export class Mailer {
  private readonly transport: Transporter;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly sending = new Set<Promise<void>>();

  constructor(
    smtpUrl: string,
    private readonly from: string,
    /** Told of each failed attempt (`willRetry` false after the last); never given the text. */
    private readonly onFailure: (
      failure: { about: string; attempt: number; willRetry: boolean },
      error: unknown,
    ) => void,
    private readonly retryDelaysMs: readonly number[] = RETRY_DELAYS_MS,
  ) {
    this.transport = createTransport(smtpUrl);
  }

  /** Queues `mail`; never throws. */
  send(mail: Mail, attempt = 0): void {
    const sending = this.attempt(mail, attempt).finally(() => this.sending.delete(sending));
    this.sending.add(sending);
  }

  private async attempt(mail: Mail, attempt: number): Promise<void> {
    try {
      await this.transport.sendMail({
        from: this.from,
        to: mail.to,
        subject: mail.subject,
        text: mail.text,
      });
    } catch (error) {
      const delay = this.retryDelaysMs[attempt];
      const failure = { about: mail.about, attempt: attempt + 1 };
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
